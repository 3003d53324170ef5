; expect: 6
(let ((+ *)) (+ 2 3))
