; error: type
; error-at: 3:1
(5 1)
