; error: shape
; error-at: 3:1
(ref [1 2 3] 3)
