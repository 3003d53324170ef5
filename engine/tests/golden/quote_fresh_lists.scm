; expect: (#f #t (a b (c 1.5)) #t)
(list (eq? '(1) '(1)) (equal? '(1) '(1)) '(a b (c 1.5)) (symbol? 'x))
