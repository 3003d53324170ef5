; bind: a=0
; expect: 2
; grad: a=2
(vsum (exp [a a]))
