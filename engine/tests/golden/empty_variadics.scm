; expect: (() () 0 1 #t)
(list (list) (append) (+) (*) (and))
