; error: syntax
; error-at: 3:1
(+ 1 2
