;; Below the clamp, normalize divides by 1e-8 and its VJP is G/1e-8.
; precision: f64
; bind: a=0
; expect: 0
; grad: a=1e8
(ref (normalize [a 0]) 0)
