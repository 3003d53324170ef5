; error: shape
(cross [1 2] [3 4])
