; lanes: x=-1,1,-2,3
; expect: 1 1 2 3
; grad: x=-1,1,-1,1
(if (< x 0) (- 0 x) x)
