; expect: #t
(eq? expt pow)
