; expect: (1 . 2)
(append '(1) 2)
