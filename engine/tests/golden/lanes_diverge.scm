; lanes: x=-1,1
; error: divergence
; error-at: 4:1
(if (< x 0) (- 0 x) x)
