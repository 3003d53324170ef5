; expect: [3 4]
(ref (mat [1 2] [3 4]) 1)
