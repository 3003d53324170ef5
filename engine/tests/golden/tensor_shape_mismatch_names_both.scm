; error: shape
; error-at: 4:3
(let ((v [1 2]))
  (+ v [1 2 3]))
