;; A result too large to address is a limit error, not an overflow.
; error: limit
(let ((v (zeros 70000))) (outer v v))
