; error: syntax
(define x 1)
