; expect: 7
(define (scale v) (+ v 1))
(scale 6)
