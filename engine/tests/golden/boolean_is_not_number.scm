; error: type
(+ #t 1)
