;; Lotka-Volterra predator-prey dynamics, integrated with a classical 4th-order Runge-Kutta
;; step written in the dialect:
;;   dx/dt = alpha x - beta x y      (prey)
;;   dy/dt = delta x y - gamma y     (predators)
;; from (x, y) = (10, 5) with dt = 0.1. Each lane is one observation: after `n` steps, the prey
;; count if `species` is 0, else the predator count. Lanes with different `n` leave the loop at
;; different steps; the engine runs them under lane masks.
(define dt 0.1)
(define (dx x y) (- (* alpha x) (* beta (* x y))))
(define (dy x y) (- (* delta (* x y)) (* gamma y)))

(define (rk4 x y)
  (let* ((k1x (dx x y))
         (k1y (dy x y))
         (k2x (dx (+ x (* 0.5 dt k1x)) (+ y (* 0.5 dt k1y))))
         (k2y (dy (+ x (* 0.5 dt k1x)) (+ y (* 0.5 dt k1y))))
         (k3x (dx (+ x (* 0.5 dt k2x)) (+ y (* 0.5 dt k2y))))
         (k3y (dy (+ x (* 0.5 dt k2x)) (+ y (* 0.5 dt k2y))))
         (k4x (dx (+ x (* dt k3x)) (+ y (* dt k3y))))
         (k4y (dy (+ x (* dt k3x)) (+ y (* dt k3y)))))
    (cons (+ x (* (/ dt 6) (+ k1x (* 2 k2x) (* 2 k3x) k4x)))
          (+ y (* (/ dt 6) (+ k1y (* 2 k2y) (* 2 k3y) k4y))))))

(loop ((k 0) (x 10.0) (y 5.0))
  (if (= k n)
      (if (= species 0) x y)
      (let ((next (rk4 x y)))
        (recur (+ k 1) (car next) (cdr next)))))
