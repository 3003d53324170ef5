; lanes: x=-1,1
; error: divergence
; error-at: 4:1
(when (> x 0) x)
