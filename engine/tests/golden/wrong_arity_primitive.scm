; error: arity
(car 1 2)
