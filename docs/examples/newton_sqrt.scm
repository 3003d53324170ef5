; Newton's iteration for √s with a per-lane exit (a loop whose lanes leave at different steps).
; The same program as bytecode: newton_sqrt.nbc.
; Run it:  ndvm run docs/examples/newton_sqrt.scm --lane s=2,9,100,1e4 --grad
(loop ((k 0) (y 1))
  (cond ((< (abs (- (* y y) s)) 1e-5) y)
        ((= k 50) y)
        (else (recur (+ k 1) (* 0.5 (+ y (/ s y)))))))
