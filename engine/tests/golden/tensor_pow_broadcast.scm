; bind: p=2
; expect: [1 4 9]
; grad: p=12.660099
(pow [1 2 3] p)
