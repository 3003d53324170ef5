; bind: sin=3
; expect: 6
; grad: sin=2
(+ sin sin)
