; A damped oscillator x(t) = A e^(-b t) cos(ω t), evaluated for several parameter vectors at once.
; Run it:  ndvm run docs/examples/damped_oscillator.scm --bindings docs/examples/damped_oscillator.json --grad
(define (oscillator A b omega t)
  (* A (exp (- 0 (* b t))) (cos (* omega t))))

(oscillator A b omega t)
