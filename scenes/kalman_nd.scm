;; A 8-dimensional Kalman filter (scenes/kalman_nd.scene.ron, docs/gpu.md): a random-walk state
;; observed with noise; the result is the negative log-likelihood of the 80 observations `obs`
;; (a 80x8 matrix) as a function of the process noise q and the observation noise r. D is a
;; constant of the program text; `benches/benches/gpu.rs` generates the same filter for D = 2 … 32.
(loop ((k 0)
       (x  (vec 0.0 0.0 0.0 0.0 0.0 0.0 0.0 0.0))
       (P  (eye 8))
       (L  0.0))
  (if (= k 80)
      L
      (let* ((Q     (scale q (eye 8)))
             (R     (scale r (eye 8)))
             (Ppred (+ P Q))
             (y     (ref obs k))
             (e     (- y x))
             (S     (+ Ppred R))
             (Sinv  (inv S))
             (Kg    (matmul Ppred Sinv))
             (xnew  (+ x (matvec Kg e)))
             (Pnew  (matmul (- (eye 8) Kg) Ppred))
             (nll   (+ (logdet S) (dot e (matvec Sinv e)))))
        (recur (+ k 1) xnew Pnew (+ L nll)))))
