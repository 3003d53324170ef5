; error: shape
(list-ref '(1 2 3) 3)
