; precision: f64
; expect: 5
(let ((A (mat [4 1 0 0 1] [1 4 1 0 0] [0 1 4 1 0] [0 0 1 4 1] [1 0 0 1 4])))
  (trace (matmul A (inv A))))
