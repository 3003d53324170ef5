; bind: a=1 b=2
; expect: [3 8]
; grad: a=1 b=4
(+ (* 2 [1 2]) [a (* b b)])
