; expect: (#t #t #f #f)
(list (procedure? car) (procedure? (lambda (x) x)) (procedure? 'car) (pair? car))
