; bind: a=1
; expect: 6
; grad: a=1
(trace (mat [a 2 3] [4 5 6]))
