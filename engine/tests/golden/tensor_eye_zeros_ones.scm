;; Sizes are structural numbers, truncated toward zero.
; expect: (mat [2 1] [1 2])
(+ (eye 2.7) (outer (ones 2) (ones 2)) (outer (zeros 2) [5 5]))
