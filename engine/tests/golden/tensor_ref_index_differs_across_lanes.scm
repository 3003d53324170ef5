; error: divergence
; lanes: k=0,1
(ref [10 20] k)
