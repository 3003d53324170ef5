; error: arity
(loop ((i 0)) (recur 1 2))
