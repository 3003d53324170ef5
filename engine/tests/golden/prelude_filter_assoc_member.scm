; expect: ((2 4) (b 2) (3 4) #f)
(list (filter (lambda (x) (= (modulo x 2) 0)) '(1 2 3 4)) (assoc 'b '((a 1) (b 2))) (member 3 '(1 2 3 4)) (member 9 '(1)))
