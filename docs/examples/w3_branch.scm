; W3, a branch: two laws on either side of a threshold. Where lanes disagree on the test,
; both arms run over their own lanes and the results are merged per lane.
; The same program as bytecode: w3_branch.nbc.
; Run it:  ndvm run docs/examples/w3_branch.scm --bind a=1.5 --bind b=0.7 --lane x=0.2,0.4,0.6,0.8 --grad
(if (> x 0.5)
    (* a (exp x))
    (- (* b (* x x)) a))
