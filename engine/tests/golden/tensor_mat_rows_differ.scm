; error: shape
(mat [1 2] [1 2 3])
