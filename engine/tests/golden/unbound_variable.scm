; error: unbound
; error-at: 3:6
(+ 1 nope)
