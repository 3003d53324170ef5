; limits: depth=1000
; error: limit
(define (f n) (if (= n 0) 0 (+ 1 (f (- n 1)))))
(f 5000)
