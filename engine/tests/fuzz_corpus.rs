//! The reference differential-testing corpus `fuzz/seed1234_n200.jsonl`: G1 forward vs oracle,
//! G2 gradient vs oracle, G3 gradient vs central finite differences of our own forward, with the
//! tolerances of `testdata/README.md`.

mod common;
use common::*;
use ndvm_engine::check::finite_differences;
use ndvm_engine::prelude::*;

#[test]
fn reference_corpus_passes_g1_g2_g3() {
    let corpus = read_jsonl("fuzz/seed1234_n200.jsonl");
    assert_eq!(corpus.len(), 200);
    let mut failures = Vec::new();
    for p in &corpus {
        let id = p["id"].as_u64().unwrap_or(0);
        let src = p["src"].as_str().expect("src");
        let mut b32 = Bindings::<f32>::new();
        let mut b64 = Bindings::<f64>::new();
        for (name, v) in p["params"].as_object().expect("params") {
            let x = v.as_f64().expect("param");
            b32.scalar(name, x as f32);
            b64.scalar(name, x);
        }
        let program =
            Program::new(src, &b32.names()).unwrap_or_else(|e| panic!("{id}: {}", e.render(src)));
        let mut vm = Vm::<f32>::default();
        let out = evaluate(&mut vm, &program, &b32, true)
            .unwrap_or_else(|e| panic!("{id}: {}", e.render(src)));
        let fwd = numbers(&out)[0] as f64;
        let want = num(&p["fwd_oracle"]).expect("fwd_oracle");
        if !close(fwd, want, 1e-4, 1e-4) {
            failures.push(format!("G1 #{id}: {fwd} vs oracle {want}"));
        }
        // G3 differences the engine's own forward; in f64 so the step's rounding noise is negligible.
        let mut vm64 = Vm::<f64>::default();
        let fd = finite_differences(&mut vm64, &program, &b64, 1e-3).expect("finite differences");
        for ((name, g), (_, d)) in out.grads.iter().zip(&fd) {
            let g = g[0] as f64;
            let oracle = num(&p["grad_oracle"][name]).expect("grad_oracle");
            if !close(g, oracle, 2e-3, 2e-3) {
                failures.push(format!("G2 #{id} d/d{name}: {g} vs oracle {oracle}"));
            }
            if !close(g, d[0], 1e-2, 5e-2) {
                failures.push(format!(
                    "G3 #{id} d/d{name}: {g} vs finite difference {}",
                    d[0]
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} gate failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
