;; Two bodies under Newtonian gravity in 3-D, integrated with 100 leapfrog (kick-drift-kick)
;; steps. Forces use `norm`, `scale` and vector arithmetic. The result is the distance of the
;; light body from the origin at the end; its gradients with respect to the gravitational
;; parameter GM and the initial speed v0 say how the orbit responds.
; Run it:  ndvm run docs/examples/gravity3d.scm --bindings docs/examples/gravity3d.json --grad
(define dt 0.01)

;; Acceleration of a body at position p around a mass at the origin: -GM p / |p|^3.
(define (accel p)
  (let ((r (norm p)))
    (scale (/ (- 0 GM) (* r r r)) p)))

(define (leapfrog p v)
  (let* ((v-half (+ v (scale (* 0.5 dt) (accel p))))
         (p-new  (+ p (scale dt v-half)))
         (v-new  (+ v-half (scale (* 0.5 dt) (accel p-new)))))
    (list p-new v-new)))

(loop ((k 0) (p [1 0 0]) (v (vec 0 v0 0.1)))
  (if (= k 100)
      (norm p)
      (let ((s (leapfrog p v)))
        (recur (+ k 1) (car s) (cadr s)))))
