; error: shape
(vlen (mat [1 2]))
