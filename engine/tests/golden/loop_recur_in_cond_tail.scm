; expect: 3
(loop ((i 0)) (cond ((= i 3) i) (else (recur (+ i 1)))))
