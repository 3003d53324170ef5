; expect: 15
(define (adder n) (lambda (x) (+ x n)))
(define add5 (adder 5))
(let ((n 100)) (add5 10))
