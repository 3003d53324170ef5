; The 16-step chaotic logistic map x ← r x (1 − x), a loop the walk runs in constant space.
; Run it:  ndvm run docs/examples/logistic_map.scm --bind r=3.2 --bind x0=0.4 --grad
(loop ((x x0) (k 0))
  (if (= k 16)
      x
      (recur (* r (* x (- 1.0 x))) (+ k 1))))
