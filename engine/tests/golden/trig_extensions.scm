; bind: x=0.5
; expect: 2.4450238
; grad: x=3.9471677
(+ (sinh x) (cosh x) (tan x) (square x) 0)
