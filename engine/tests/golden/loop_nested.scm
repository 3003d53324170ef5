; expect: 12
(loop ((i 0) (acc 0))
  (if (= i 3) acc
      (recur (+ i 1) (+ acc (loop ((j 0) (a 0)) (if (= j 4) a (recur (+ j 1) (+ a 1))))))))
