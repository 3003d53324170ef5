; expect: 6
(letrec* ((a 1) (b (+ a 2)) (c (* b 2))) c)
