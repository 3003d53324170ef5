; error: unbound
; error-at: 3:14
(define x (+ y 1))
(define y 2)
x
