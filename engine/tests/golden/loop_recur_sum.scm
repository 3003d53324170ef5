; expect: 5050
(loop ((i 1) (s 0)) (if (> i 100) s (recur (+ i 1) (+ s i))))
