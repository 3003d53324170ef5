; error: type
; error-at: 3:1
(car 1)
2
