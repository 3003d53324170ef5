;; At a singular matrix det is 0 and its VJP is still the cofactor matrix.
; bind: a=1 b=2 c=2 d=4
; expect: 0
; grad: a=4 b=-2 c=-2 d=1
(det (mat [a b] [c d]))
