; error: unbound
(set! x 1)
