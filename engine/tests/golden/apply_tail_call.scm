; expect: done
(define (f n) (if (= n 0) 'done (apply f (list (- n 1)))))
(f 100000)
