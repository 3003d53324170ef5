;; A Kalman filter whose state dimension D comes from the data: `obs` is a T x D matrix of noisy
;; observations of a D-dimensional random walk. The result is the negative log-likelihood as a
;; function of the process noise q and the observation noise r (T, the row count, is bound too).
;; For D >= 4, `logdet` and `inv` run an LU factorization with partial pivoting.
; Run it:  ndvm run docs/examples/kalman_nd.scm --bindings docs/examples/kalman_d4.json --grad
(define D (vlen (ref obs 0)))
(define I (eye D))

(loop ((k 0) (x (zeros D)) (P I) (L 0.0))
  (if (= k T)
      L
      (let* ((Ppred (+ P (scale q I)))
             (e     (- (ref obs k) x))
             (S     (+ Ppred (scale r I)))
             (Sinv  (inv S))
             (K     (matmul Ppred Sinv)))
        (recur (+ k 1)
               (+ x (matvec K e))
               (matmul (- I K) Ppred)
               (+ L (logdet S) (dot e (matvec Sinv e)))))))
