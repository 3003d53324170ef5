; expect: (#t #t #f)
(list (eq? 2 (+ 1 1)) (eqv? 0.0 -0.0) (eq? (/ 0 0) (/ 0 0)))
