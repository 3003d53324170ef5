; bind: a=1 b=2 c=3
; expect: 2
; grad: a=0 b=1 c=0
(car (cdr (list a b c)))
