;; n >= 4: LU with partial pivoting.
; precision: f64
; bind: a=1 b=5
; expect: -18
; grad: a=6 b=1
(det (mat [a 2 3 4] [2 1 3 b] [0 0 1 2] [1 1 1 7]))
