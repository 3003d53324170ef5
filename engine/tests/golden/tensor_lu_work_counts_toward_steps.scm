;; A factorization costs far more than its result's size: its arithmetic counts toward the
;; eval-step limit (one step per 1024 multiply-adds), so untrusted programs stay bounded.
; limits: steps=5000
; error: limit
(inv (eye 300))
