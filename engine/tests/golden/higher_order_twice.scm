; bind: a=1.5 z=2
; expect: 5
; grad: a=2 z=1
((lambda (f x) (f (f x))) (lambda (y) (+ y a)) z)
