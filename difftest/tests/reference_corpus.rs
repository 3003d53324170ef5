//! The independent oracle against the reference system's own oracle: every program of
//! `fuzz/seed1234_n200.jsonl` gives the reference's forward value and gradient (the reference
//! computed in f32, so its tolerances apply), and every one passes our gates G1–G4.

use ndvm_difftest::gates::Engines;
use ndvm_difftest::oracle;
use ndvm_difftest::prelude::*;

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol + tol * b.abs()
}

#[test]
fn our_oracle_agrees_with_the_reference_oracle_and_the_engine_passes_every_gate() {
    let corpus = ndvm_testdata::fuzz_corpus();
    assert_eq!(corpus.len(), 200);
    let mut failures = Vec::new();
    let mut engines = Engines::default();
    for p in &corpus {
        let id = p["id"].as_u64().unwrap_or(0);
        let src = p["src"].as_str().expect("src");
        let params: Vec<(String, f64)> = p["params"]
            .as_object()
            .expect("params")
            .iter()
            .map(|(k, v)| (k.clone(), v.as_f64().expect("param")))
            .collect();
        let o = oracle::evaluate(src, &params).unwrap_or_else(|e| panic!("#{id}: {e}"));
        let want = p["fwd_oracle"].as_f64().expect("fwd_oracle");
        if !close(o.value, want, 1e-4) {
            failures.push(format!("#{id} value {} vs reference {want}", o.value));
        }
        for (i, (name, _)) in params.iter().enumerate() {
            let want = p["grad_oracle"][name].as_f64().expect("grad_oracle");
            if !close(o.grad[i], want, 2e-3) {
                failures.push(format!("#{id} d/d{name} {} vs reference {want}", o.grad[i]));
            }
        }
        // Lanes for G4 spread the parameters by a few tenths.
        let spread = [0.13, -0.21, 0.29].map(|s| vec![s; params.len()]);
        let v = check(&mut engines, src, &params, &o, &spread, true);
        for (gate, msg) in &v.failures {
            failures.push(format!("#{id} {gate:?}: {msg}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
