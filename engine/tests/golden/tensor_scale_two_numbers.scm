; error: type
; error-at: 3:1
(scale 2 3)
