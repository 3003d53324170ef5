; W4, a small summed matrix-vector product: the sum of M·v for a 3×3 data matrix M and a
; parameter vector v = [a b c].
; The same program as bytecode: w4_matvec.nbc.
; Run it:  ndvm run docs/examples/w4_matvec.scm --bindings docs/examples/w4_matvec.json --grad
(vsum (matvec M [a b c]))
