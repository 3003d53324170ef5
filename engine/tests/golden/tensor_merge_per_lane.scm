;; Tensors merge per lane when a branch splits.
; lanes: x=-1,1
; expect: 0 3
; grad: x=1,1
(vsum (if (< x 0) (vec x 1) (vec 2 x)))
