;; Broadcasting a lane number: its adjoint is the sum over the elements.
; bind: s=2
; expect: 12
; grad: s=6
(vsum (* s [1 2 3]))
