;; A singular 4x4: the cofactors come from the minors.
; precision: f64
; bind: a=1
; expect: 0
; grad: a=4
(det (mat [a 2 3 4] [2 4 6 8] [0 1 0 1] [1 0 1 0]))
