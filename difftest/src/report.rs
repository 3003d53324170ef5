//! What a campaign reports: the checked programs (the frozen corpus), the failures, and the
//! coverage table per feature family.

use serde::Serialize;
use std::collections::BTreeMap;

/// One checked program, in the reference corpus's format (`fuzz/seed1234_n200.jsonl`).
#[derive(Clone, Debug, Serialize)]
pub struct Case {
    pub id: usize,
    pub src: String,
    pub params: BTreeMap<String, f64>,
    pub features: Vec<&'static str>,
    pub fwd_oracle: f64,
    pub grad_oracle: BTreeMap<String, f64>,
    pub grad_fd: BTreeMap<String, f64>,
}

/// A program that failed a gate (or that the generator could not make).
#[derive(Clone, Debug, Serialize)]
pub struct Failure {
    pub id: usize,
    /// `G1`…`G4`, or `generator`.
    pub gate: String,
    pub detail: String,
    pub src: String,
    pub params: BTreeMap<String, f64>,
    /// The smallest program found that still fails the same gate.
    pub minimized: Option<String>,
}

/// One row of the coverage table: programs using the family and how many passed each gate.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct FamilyRow {
    pub family: &'static str,
    pub programs: usize,
    pub g1: usize,
    pub g2: usize,
    pub g3: usize,
    pub g4: usize,
}

/// The outcome of a campaign. Everything in it is deterministic.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub seed: u64,
    pub n: usize,
    /// The client checked.
    pub target: crate::gates::Target,
    /// Programs checked (always `n`).
    pub checked: usize,
    /// Generated programs the oracle turned away, by reason.
    pub rejected: BTreeMap<&'static str, usize>,
    /// Programs whose G4 batch diverged structurally with widely spread lanes (then rerun close).
    pub g4_divergent: usize,
    /// Programs too ill-conditioned for f32 (see [`f32_conditioned`]): G1 and G2 in f64 only.
    pub f64_only: usize,
    /// Programs whose G3 differences straddled a branch switch (counted as passing G3).
    pub g3_inconclusive: usize,
    /// Passes per gate over all programs.
    pub gates: BTreeMap<&'static str, usize>,
    pub families: Vec<FamilyRow>,
    pub failures: Vec<Failure>,
    /// The checked programs with their oracle values (written as `corpus.jsonl`).
    #[serde(skip)]
    pub corpus: Vec<Case>,
}

impl Report {
    /// Whether every program passed every gate.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }

    /// The coverage table as text: one row per family, pass rates per gate.
    pub fn table(&self) -> String {
        let mut out = format!(
            "{:<22} {:>8} {:>8} {:>8} {:>8} {:>8}\n",
            "family", "programs", "G1", "G2", "G3", "G4"
        );
        let pct = |k: usize, n: usize| {
            if n == 0 {
                "-".to_string()
            } else {
                format!("{:.1}%", 100.0 * k as f64 / n as f64)
            }
        };
        for r in &self.families {
            out.push_str(&format!(
                "{:<22} {:>8} {:>8} {:>8} {:>8} {:>8}\n",
                r.family,
                r.programs,
                pct(r.g1, r.programs),
                pct(r.g2, r.programs),
                pct(r.g3, r.programs),
                pct(r.g4, r.programs)
            ));
        }
        let g = |k: &str| pct(self.gates.get(k).copied().unwrap_or(0), self.checked);
        out.push_str(&format!(
            "{:<22} {:>8} {:>8} {:>8} {:>8} {:>8}\n",
            "all",
            self.checked,
            g("G1"),
            g("G2"),
            g("G3"),
            g("G4")
        ));
        out
    }
}
