; expect: (2 #f 3 #t #f)
(list (and 1 2) (and 1 #f 2) (or #f 3) (and) (or))
