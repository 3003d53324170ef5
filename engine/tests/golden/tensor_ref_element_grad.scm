;; The index is truncated toward zero; only the selected element gets a gradient.
; bind: a=1 b=2 c=3
; expect: 2
; grad: a=0 b=1 c=0
(ref [a b c] 1.9)
