; bind: a=1 b=2
; expect: 2
; grad: a=0 b=1
(if (> a 0) b (* b 2))
