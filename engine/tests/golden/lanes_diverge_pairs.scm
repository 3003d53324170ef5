; lanes: x=-1,1
; error: divergence
; error-at: 4:1
(if (< x 0) (cons 1 2) (cons 3 4))
