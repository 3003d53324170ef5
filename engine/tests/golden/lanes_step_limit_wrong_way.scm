; lanes: n=3,-1
; limits: steps=5000
; error: limit
(loop ((i 0)) (if (= i n) i (recur (+ i 1))))
