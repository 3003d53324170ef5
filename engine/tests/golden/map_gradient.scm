; bind: a=2
; expect: 12
; grad: a=6
(fold-left + 0 (map (lambda (x) (* a x)) '(1 2 3)))
