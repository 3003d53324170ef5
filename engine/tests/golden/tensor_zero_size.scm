; error: shape
(zeros 0.5)
