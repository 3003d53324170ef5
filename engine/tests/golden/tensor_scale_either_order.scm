; bind: s=3 a=2
; expect: 18
; grad: s=6 a=6
(+ (vsum (scale s [a 1])) (vsum (scale [a 1] s)))
