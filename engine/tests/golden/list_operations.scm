; expect: ((3 2 1) (1 2 3 4) 3 c (2 3) 4)
(list (reverse '(1 2 3)) (append '(1 2) '(3) '(4)) (length '(a b c)) (list-ref '(a b c) 2) (cdr '(1 2 3)) (caddr '(1 2 4)))
