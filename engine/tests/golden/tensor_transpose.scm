; expect: (mat [1 4] [2 5] [3 6])
(transpose (mat [1 2 3] [4 5 6]))
