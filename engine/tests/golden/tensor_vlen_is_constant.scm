; bind: a=5
; expect: 15
; grad: a=3
(* a (vlen [a a a]))
