; expect: (2 #f #f 3)
(list (when #t 1 2) (when #f 1) (unless #t 1) (unless #f 3))
