; expect: +inf.0
(/ 1 (- 0))
