; precision: f64
; exact
; expect: 0.30000000000000004
(+ 0.1 0.2)
