; error: syntax
(if 1 2)
