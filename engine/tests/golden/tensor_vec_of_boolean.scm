; error: type
; error-at: 3:1
(vec 1 #t)
