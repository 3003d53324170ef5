;; The 80-step 2-D Kalman filter of the reference conformance set: a random-walk state observed
;; with noise. The result is the negative log-likelihood of the observations `obs` (80 rows of
;; kalman_obs.csv; `(ref obs k)` is row k) as a function of the process noise q and the
;; observation noise r. At q = 0.05, r = 0.1 the oracle gives 831.22, dL/dq = -3458.7,
;; dL/dr = -7529.3.
(loop ((k 0)
       (x  (vec 0.0 0.0))
       (P  (mat (vec 1.0 0.0) (vec 0.0 1.0)))
       (L  0.0))
  (if (= k 80)
      L
      (let* ((Q     (scale q (eye 2)))
             (R     (scale r (eye 2)))
             (Ppred (+ P Q))
             (y     (ref obs k))
             (e     (- y x))
             (S     (+ Ppred R))
             (Sinv  (inv S))
             (Kg    (matmul Ppred Sinv))
             (xnew  (+ x (matvec Kg e)))
             (Pnew  (matmul (- (eye 2) Kg) Ppred))
             (nll   (+ (log (det S)) (dot e (matvec Sinv e)))))
        (recur (+ k 1) xnew Pnew (+ L nll)))))
