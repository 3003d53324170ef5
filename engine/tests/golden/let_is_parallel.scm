; expect: 1
(let ((x 1)) (let ((x 2) (y x)) y))
