; bind: alpha=2 x=1.5
; expect: 9
; grad: alpha=4.5 x=6
(define (poly x n) (if (= n 0) 0.0 (+ (* alpha x) (poly x (- n 1)))))
(poly x 3)
