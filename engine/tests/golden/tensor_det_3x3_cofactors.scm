;; det is the cofactor expansion; its gradient is the cofactor matrix.
; bind: a=2 f=2 h=1
; expect: 6
; grad: a=4 f=-2 h=-3
(det (mat [a 0 1] [1 3 f] [1 h 2]))
