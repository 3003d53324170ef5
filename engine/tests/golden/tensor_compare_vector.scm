; error: type
(< [1] 1)
