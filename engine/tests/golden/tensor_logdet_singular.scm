; expect: -inf.0
(logdet (mat [1 2] [2 4]))
