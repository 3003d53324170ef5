; bind: a=2 b=2
; expect: 2
; grad: a=0.5 b=0.5
(min a b)
