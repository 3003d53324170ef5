; error: shape
(* [1 2 3] (mat [1 2 3] [4 5 6]))
