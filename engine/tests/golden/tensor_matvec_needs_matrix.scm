;; A vector is not a matrix: there is no implicit 1xn view.
; error: shape
(matvec [1 2] [1 2])
