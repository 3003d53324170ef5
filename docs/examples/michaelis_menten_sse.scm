; Sum of squared errors of a Michaelis–Menten rate law against a small data set, written with
; lists and higher-order procedures; the gradient flows through map and fold-left.
; Run it:  ndvm run docs/examples/michaelis_menten_sse.scm --lane Vmax=1.5,2.0,2.5 --bind Km=0.5 --grad
(define substrate '(0.1 0.25 0.5 1.0 2.0 4.0))
(define observed  '(0.33 0.67 1.0 1.33 1.6 1.78))

(define (rate s) (/ (* Vmax s) (+ Km s)))

(fold-left + 0
  (map (lambda (s y) (square (- (rate s) y))) substrate observed))
