; expect: (mat [+nan.0 +nan.0] [+nan.0 +nan.0])
(inv (mat [1 2] [2 4]))
