; expect: (mat [2 3])
(sqrt (mat [4 9]))
