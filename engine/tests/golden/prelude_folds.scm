; expect: (((0 1) 2) (1 (2 0)) 6 (3 2 1))
(list (fold-left list 0 '(1 2)) (fold-right list 0 '(1 2))
      (reduce + 0 '(1 2 3)) (fold-left (lambda (acc x) (cons x acc)) '() '(1 2 3)))
