;; A tensor result seeds every element: the gradient of the sum.
; bind: a=2
; expect: [2 4 6]
; grad: a=6
(* a [1 2 3])
