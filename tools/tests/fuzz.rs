//! `ndvm fuzz` end to end: the coverage table, the frozen corpus and report, JSON output and
//! exit codes.

use serde_json::Value;
use std::process::{Command, Output};

fn ndvm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ndvm"))
        .args(args)
        .output()
        .expect("runs ndvm")
}

#[test]
fn prints_the_coverage_table_and_exits_0() {
    let out = ndvm(&["fuzz", "--n", "60", "--seed", "11"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for family in ["literal", "loop_recur", "higher_order", "linalg", "all"] {
        assert!(
            stdout.lines().any(|l| l.starts_with(family)),
            "no {family} row in\n{stdout}"
        );
    }
    assert!(stdout.contains("60 programs (seed 11)"), "{stdout}");
    assert!(
        stdout.contains("every program passed every gate"),
        "{stdout}"
    );
}

#[test]
fn checks_the_bytecode_client() {
    let out = ndvm(&["fuzz", "--n", "40", "--seed", "5", "--bytecode", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["target"], "bytecode");
    assert_eq!(v["checked"], 40);
    assert!(
        v["rejected"]["outside the bytecode subset"]
            .as_u64()
            .is_some_and(|k| k > 0)
    );
    let text = ndvm(&["fuzz", "--n", "10", "--seed", "5", "--bytecode"]);
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(
        stdout.contains("10 programs (seed 5) on the bytecode client"),
        "{stdout}"
    );
}

#[test]
fn freezes_the_corpus_and_report_and_prints_json() {
    let dir = std::env::temp_dir().join(format!("ndvm-fuzz-test-{}", std::process::id()));
    let d = dir.to_str().expect("utf-8 path");
    let out = ndvm(&["fuzz", "--n", "25", "--seed", "3", "--out", d, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(printed["n"], 25);
    assert_eq!(printed["gates"]["G4"], 25);
    assert!(printed["timing"]["seconds"].as_f64().is_some());
    let families = printed["families"].as_array().expect("families");
    assert_eq!(families.len(), 20);

    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).expect("report"))
            .expect("json");
    let strip = |mut v: Value| {
        v.as_object_mut().map(|o| o.remove("timing"));
        v
    };
    assert_eq!(strip(saved), strip(printed.clone()));

    // The corpus has the reference corpus's format, one program a line.
    let corpus = std::fs::read_to_string(dir.join("corpus.jsonl")).expect("corpus");
    let lines: Vec<Value> = corpus
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert_eq!(lines.len(), 25);
    for (i, case) in lines.iter().enumerate() {
        assert_eq!(case["id"], i);
        for key in [
            "src",
            "params",
            "features",
            "fwd_oracle",
            "grad_oracle",
            "grad_fd",
        ] {
            assert!(!case[key].is_null(), "#{i} has no {key}");
        }
    }

    // Everything but the timing is the same on a rerun with another thread count.
    let again = ndvm(&[
        "fuzz",
        "--n",
        "25",
        "--seed",
        "3",
        "--json",
        "--threads",
        "1",
    ]);
    let again: Value = serde_json::from_slice(&again.stdout).expect("json");
    assert_eq!(strip(again), strip(printed));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unwritable_out_dir_is_a_usage_error() {
    let out = ndvm(&["fuzz", "--n", "2", "--out", "/proc/ndvm-cannot-write-here"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("error:"));
}
