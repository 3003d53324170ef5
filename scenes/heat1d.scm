;; The 1-D heat equation on 10 points: explicit Euler steps u <- u + dt*alpha*L*u with the
;; tridiagonal Laplacian L (fixed zero ends), from a tent-shaped initial profile. `measured`
;; holds the profile after every 10 steps (5 rows of heat_measured.csv, made with
;; alpha = 0.01 plus 0.02% noise); the result is the summed squared misfit, a function of the
;; diffusivity alpha.
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
(define (step u) (+ u (scale (* dt alpha) (matvec L u))))
(define (steps u k) (if (= k 0) u (steps (step u) (- k 1))))

;; Five observation times, 10 steps apart.
(loop ((row 0) (u u0) (misfit 0))
  (if (= row 5)
      misfit
      (let* ((u (steps u 10))
             (d (- u (ref measured row))))
        (recur (+ row 1) u (+ misfit (dot d d))))))
