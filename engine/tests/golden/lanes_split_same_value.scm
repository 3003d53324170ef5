; lanes: x=-1,2
; expect: -1 2
; grad: x=1,1
(if (> x 0) x x)
