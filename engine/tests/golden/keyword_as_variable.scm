; error: syntax
(list if)
