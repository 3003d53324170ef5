; error: unbound
; error-at: 3:13
(letrec ((a b) (b 1)) a)
