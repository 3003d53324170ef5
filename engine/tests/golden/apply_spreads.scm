; expect: 10
(apply + 1 2 '(3 4))
