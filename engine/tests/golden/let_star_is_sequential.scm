; expect: 3
(let* ((x 1) (x (+ x 1)) (y (+ x 1))) y)
