; bind: a=1 b=2
; expect: (mat [3 4] [6 8])
; grad: a=7 b=7
(outer [a b] [3 4])
