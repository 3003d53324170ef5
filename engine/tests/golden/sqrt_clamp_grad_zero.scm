; bind: x=-1
; expect: 9.99999975e-05
; grad: x=0
(sqrt x)
