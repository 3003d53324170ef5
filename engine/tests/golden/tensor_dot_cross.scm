; bind: a=1 b=2
; expect: 6
; grad: a=4 b=2
(+ (dot [a b] [2 1]) (vsum (cross [a 0 0] [0 b 0])))
