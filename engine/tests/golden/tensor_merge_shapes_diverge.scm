; error: divergence
; lanes: x=-1,1
(if (< x 0) [1 2] [1 2 3])
