; W2, a counted loop: 30 steps of the logistic map x ← r·x·(1 − x).
; The same program as bytecode: w2_counted_loop.nbc (a LOOP block instead of loop/recur).
; Run it:  ndvm run docs/examples/w2_counted_loop.scm --lane r=2.5,3.1,3.5,3.9 --bind x0=0.4 --grad
(loop ((i 0) (x x0))
  (if (< i 30)
      (recur (+ i 1) (* r (* x (- 1 x))))
      x))
