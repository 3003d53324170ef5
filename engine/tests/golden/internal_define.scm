; expect: 10
(define (f x)
  (define y (* x 2))
  (define (g z) (+ z y))
  (g x))
(f (/ 10 3))
