//! The CI campaign (`ndvm fuzz --n 500 --seed 1234`): every generated program passes G1–G4,
//! every feature family is covered, and the report is the same for every thread count.

use ndvm_difftest::prelude::*;

#[test]
fn seed_1234_n500_passes_every_gate_and_covers_every_family() {
    let report = campaign(&Campaign::default(), |_| {});
    assert_eq!((report.n, report.seed, report.checked), (500, 1234, 500));
    let failures: Vec<String> = report
        .failures
        .iter()
        .map(|f| format!("#{} {}: {}\n{}", f.id, f.gate, f.detail, f.src))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    for row in &report.families {
        assert!(row.programs > 0, "family {} is not covered", row.family);
        assert_eq!(
            [row.g1, row.g2, row.g3, row.g4],
            [row.programs; 4],
            "{}",
            row.family
        );
    }
    assert_eq!(report.families.len(), Feature::ALL.len());
    assert_eq!(report.corpus.len(), 500);
    // The frozen corpus carries the oracle's values and the finite differences G3 used.
    let case = &report.corpus[0];
    assert_eq!(case.grad_oracle.len(), case.params.len());
    assert_eq!(case.grad_fd.len(), case.params.len());
}

#[test]
fn the_report_is_the_same_for_every_thread_count() {
    let run = |threads| {
        let c = Campaign {
            n: 120,
            seed: 99,
            threads,
            minimize: true,
            target: Target::Walk,
        };
        let r = campaign(&c, |_| {});
        let corpus: Vec<String> = r
            .corpus
            .iter()
            .map(|c| serde_json::to_string(c).expect("json"))
            .collect();
        (serde_json::to_string(&r).expect("json"), corpus)
    };
    let one = run(1);
    assert_eq!(one, run(2));
    assert_eq!(one, run(4));
}

#[test]
fn progress_reports_every_program() {
    let seen = std::sync::atomic::AtomicUsize::new(0);
    let c = Campaign {
        n: 30,
        seed: 5,
        ..Campaign::default()
    };
    campaign(&c, |done| {
        seen.fetch_max(done, std::sync::atomic::Ordering::Relaxed);
    });
    assert_eq!(seen.into_inner(), 30);
}

#[test]
fn the_bytecode_client_passes_every_gate_and_matches_the_walk_bit_for_bit() {
    // The bytecode target also requires the compiled program's values and gradients to equal
    // the tree walk's bit for bit (part of G1 and G2).
    let c = Campaign {
        n: 200,
        seed: 31,
        target: Target::Bytecode,
        ..Campaign::default()
    };
    let r = campaign(&c, |_| {});
    assert_eq!(r.checked, 200);
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    assert!(
        r.rejected
            .get(ndvm_difftest::campaign::OUTSIDE_SUBSET)
            .is_some_and(|&k| k > 0)
    );
    // The subset's families are all exercised.
    for family in [
        "let",
        "let_star",
        "if_compare",
        "loop_recur",
        "cond",
        "vector",
        "matrix",
    ] {
        let row = r
            .families
            .iter()
            .find(|f| f.family == family)
            .expect("family");
        assert!(row.programs > 0, "{family} never generated");
    }
}
