; error: shape
; error-at: 3:1
(matmul (mat [1 2]) (mat [1 2]))
