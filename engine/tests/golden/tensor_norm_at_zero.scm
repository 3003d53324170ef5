;; norm does not clamp; its gradient at the zero vector is 0.
; bind: a=0 b=0
; expect: 0
; grad: a=0 b=0
(norm [a b])
