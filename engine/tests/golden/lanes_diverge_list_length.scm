; lanes: n=2,3
; error: divergence
(loop ((l (quote ())) (i 0)) (if (= i n) l (recur (cons i l) (+ i 1))))
