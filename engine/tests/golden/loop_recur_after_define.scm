; expect: 4
(loop ((i 0)) (define j (+ i 1)) (if (> j 3) j (recur j)))
