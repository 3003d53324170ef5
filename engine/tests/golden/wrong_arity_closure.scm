; error: arity
; error-at: 4:1
(define (f x) x)
(f 1 2)
