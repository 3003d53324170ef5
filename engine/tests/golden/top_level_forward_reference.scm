; expect: 42
(define (f) (g))
(define (g) answer)
(define answer 42)
(f)
