;; The 1-D heat equation on 10 points: explicit Euler steps u <- u + dt*alpha*L*u with the
;; tridiagonal Laplacian L (fixed zero ends). The result is the squared misfit between the
;; profile after 50 steps and `target` (the profile alpha = 0.01 produces); its gradient with
;; respect to alpha drives calibration.
; Run it:  ndvm run docs/examples/heat1d.scm --bindings docs/examples/heat1d.json --grad
(define n 10)
(define dx 0.1)
(define dt 0.1)

;; L[i][j] = (-2 if i = j, 1 if |i - j| = 1, else 0) / dx^2
(define (laplacian-row i)
  (apply vec
         (map (lambda (j)
                (/ (cond ((= i j) -2) ((= (abs (- i j)) 1) 1) (else 0)) (* dx dx)))
              '(0 1 2 3 4 5 6 7 8 9))))
(define L (apply mat (map laplacian-row '(0 1 2 3 4 5 6 7 8 9))))

(define u0 [0 0.3 0.6 0.9 1 1 0.9 0.6 0.3 0])
(define target [0.161186 0.311861 0.440598 0.535448 0.585968 0.585968 0.535448 0.440598 0.311861 0.161186])

(define (step u) (+ u (scale (* dt alpha) (matvec L u))))

(let ((u (loop ((k 0) (u u0)) (if (= k 50) u (recur (+ k 1) (step u))))))
  (let ((d (- u target)))
    (dot d d)))
