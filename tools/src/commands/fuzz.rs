//! `ndvm fuzz`: differential testing of the engine against the independent oracle.
//!
//! Generates `--n` programs from `--seed`, checks each through gates G1–G4
//! (`ndvm_difftest::gates`), prints the feature-coverage table and any failing program
//! (minimized), optionally freezes the corpus and report under `--out`, and exits 1 if any
//! program failed a gate.

use crate::Failure;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use ndvm_difftest::prelude::*;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct FuzzArgs {
    /// Number of programs to generate and check.
    #[arg(long, value_name = "N", default_value_t = 500)]
    n: usize,
    /// Campaign seed: the same seed gives the same programs and the same report.
    #[arg(long, value_name = "S", default_value_t = 1234)]
    seed: u64,
    /// Write `corpus.jsonl` (every checked program with its oracle values) and `report.json` here.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Worker threads (default: one per core). The report is the same for every count.
    #[arg(long, value_name = "N", default_value_t = 0)]
    threads: usize,
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Report failing programs as generated, without shrinking them.
    #[arg(long)]
    no_minimize: bool,
    /// Check the bytecode client instead of the tree walk: every program is compiled to
    /// bytecode (the dialect subset of docs/bytecode.md; programs outside it are regenerated)
    /// and run by the bytecode VM through the same gates.
    #[arg(long)]
    bytecode: bool,
}

pub fn fuzz(args: FuzzArgs) -> Result<(), Failure> {
    let campaign = Campaign {
        n: args.n,
        seed: args.seed,
        threads: args.threads,
        minimize: !args.no_minimize,
        target: if args.bytecode {
            Target::Bytecode
        } else {
            Target::Walk
        },
    };
    // Drawn on standard error, and hidden when that is not a terminal.
    let bar = ProgressBar::new(args.n as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} programs ({per_sec}, eta {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let start = Instant::now();
    let report = ndvm_difftest::campaign(&campaign, |done| bar.set_position(done as u64));
    bar.finish_and_clear();
    let seconds = start.elapsed().as_secs_f64();

    let mut json = serde_json::to_value(&report).map_err(|e| Failure::Usage(e.to_string()))?;
    json["timing"] = serde_json::json!({ "seconds": seconds });
    if let Some(dir) = &args.out {
        write_out(dir, &report, &json)?;
    }
    if args.json {
        crate::output::print(&serde_json::to_string_pretty(&json).unwrap_or_default())?;
    } else {
        crate::output::print(report_text(&report, seconds).trim_end())?;
    }
    if report.passed() {
        Ok(())
    } else {
        Err(Failure::Program)
    }
}

fn report_text(report: &Report, seconds: f64) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    out += &report.table();
    let rejected: Vec<String> = report
        .rejected
        .iter()
        .map(|(why, k)| format!("{k} {why}"))
        .collect();
    let _ = writeln!(
        out,
        "\n{} programs (seed {}) on the {} client in {seconds:.1} s; regenerated: {}; checked in f64 only (ill-conditioned for f32): {}; G3 inconclusive (a test flips within the stencil): {}; G4 batches that diverged structurally: {}",
        report.checked,
        report.seed,
        match report.target {
            Target::Walk => "walk",
            Target::Bytecode => "bytecode",
        },
        if rejected.is_empty() {
            "none".to_string()
        } else {
            rejected.join(", ")
        },
        report.f64_only,
        report.g3_inconclusive,
        report.g4_divergent
    );
    if report.failures.is_empty() {
        let _ = writeln!(out, "every program passed every gate");
        return out;
    }
    let _ = writeln!(out, "\n{} failing programs:", report.failures.len());
    for f in &report.failures {
        let params: Vec<String> = f.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(
            out,
            "\n#{} {} [{}]\n  {}",
            f.id,
            f.gate,
            params.join(" "),
            f.detail
        );
        let _ = writeln!(out, "  program:\n    {}", f.src.replace('\n', "\n    "));
        if let Some(m) = &f.minimized {
            let _ = writeln!(out, "  minimized:\n    {}", m.replace('\n', "\n    "));
        }
    }
    out
}

fn write_out(dir: &PathBuf, report: &Report, json: &serde_json::Value) -> Result<(), Failure> {
    let usage = |e: std::io::Error| Failure::Usage(format!("{}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(usage)?;
    let mut corpus = String::new();
    for case in &report.corpus {
        corpus += &serde_json::to_string(case).map_err(|e| Failure::Usage(e.to_string()))?;
        corpus.push('\n');
    }
    // Written whole or not at all: an interrupted run leaves the previous files intact.
    crate::files::write_atomically(&dir.join("corpus.jsonl"), &corpus)?;
    let text = serde_json::to_string_pretty(json).unwrap_or_default();
    crate::files::write_atomically(&dir.join("report.json"), &(text + "\n"))
}
