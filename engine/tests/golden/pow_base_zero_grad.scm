; bind: a=0 b=2
; expect: 0
; grad: a=0 b=0
(pow a b)
