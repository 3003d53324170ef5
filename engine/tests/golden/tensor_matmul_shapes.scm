; expect: (mat [14])
(matmul (mat [1 2 3]) (mat [1] [2] [3]))
