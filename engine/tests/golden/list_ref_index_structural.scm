; lanes: k=0,1
; error: divergence
(list-ref '(1 2 3) k)
