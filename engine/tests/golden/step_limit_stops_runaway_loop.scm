; limits: steps=10000
; error: limit
(loop ((i 0)) (recur (- i 1)))
