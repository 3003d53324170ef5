; expect: (#t #f #f #t)
(let ((v [1 2]))
  (list (equal? [1 2] [1 2]) (eq? [1 2] [1 2]) (equal? [1 2] (mat [1 2])) (eq? v v)))
