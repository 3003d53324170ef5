; W1, a scalar closed-form expression: a damped exponential plus a sinusoid.
; The same program as bytecode: w1_closed_form.nbc (both clients agree bit for bit).
; Run it:  ndvm run docs/examples/w1_closed_form.scm --bind a=2 --bind b=0.5 --bind c=0.3 --bind w=3 --lane t=0,0.5,1,2 --grad
(+ (* a (exp (- (* b t))))
   (* c (sin (* w t))))
