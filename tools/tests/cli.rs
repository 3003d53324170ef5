//! `ndvm run` end to end: values, gradients, JSON, bindings files, errors and exit codes.

mod common;
use common::ndvm;
use serde_json::Value;
use std::io::Write;
use std::process::{Output, Stdio};

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn runs_with_lanes_and_gradients_as_json() {
    let out = ndvm(&[
        "run",
        "--expr",
        "(/ (* Vmax S) (+ Km S))",
        "--bind",
        "Vmax=2",
        "--bind",
        "Km=0.5",
        "--lane",
        "S=1.5,0.5",
        "--grad",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    assert_eq!(v["lanes"], 2);
    assert_eq!(v["result"][0], 1.5);
    assert_eq!(v["result"][1], 1.0);
    assert_eq!(v["grads"]["Vmax"][0], 0.75);
    assert_eq!(v["grads"]["Km"][0], -0.75);
    assert_eq!(v["grads"]["S"][0], 0.25);
    assert!(v.get("timing").is_none());
}

#[test]
fn reads_a_bindings_file_and_stdin() {
    let dir = std::env::temp_dir().join(format!("ndvm-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let file = dir.join("b.json");
    std::fs::write(&file, r#"{"scalars": {"a": 2}, "lanes": {"x": [1, 2, 3]}, "matrices": {"m": {"rows": 1, "cols": 1, "data": [5]}}}"#).expect("write");
    let mut child = common::command()
        .args([
            "run",
            "-",
            "--bindings",
            file.to_str().expect("path"),
            "--grad",
            "--json",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"(* a x x)")
        .expect("write");
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success());
    let v = json(&out);
    assert_eq!(v["result"], serde_json::json!([2.0, 8.0, 18.0]));
    assert_eq!(v["grads"]["x"], serde_json::json!([4.0, 8.0, 12.0]));
    assert_eq!(v["grads"]["a"], serde_json::json!([1.0, 4.0, 9.0]));
}

#[test]
fn repeat_reports_median_timing() {
    let out = ndvm(&[
        "run",
        "--expr",
        "(+ (* alpha x) beta)",
        "--bind",
        "alpha=2",
        "--bind",
        "x=1.5",
        "--bind",
        "beta=1",
        "--grad",
        "--json",
        "--repeat",
        "50",
    ]);
    assert!(out.status.success());
    let v = json(&out);
    assert_eq!(v["timing"]["repeats"], 50);
    assert!(v["timing"]["per_eval_us"].as_f64().is_some_and(|t| t > 0.0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("per evaluation (forward+gradient"));
}

#[test]
fn program_errors_exit_1_with_location() {
    let dir = std::env::temp_dir().join(format!("ndvm-cli-err-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let file = dir.join("bad.scm");
    std::fs::write(&file, "(define (f x)\n  (car x))\n(f 1.0)\n").expect("write");
    let out = ndvm(&["run", file.to_str().expect("path")]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("type error"), "{err}");
    assert!(err.contains("line 2, column 3"), "{err}");
    assert!(
        err.contains("(car x)"),
        "the offending line is shown: {err}"
    );
    for (src, kind) in [
        ("(+ 1", "syntax"),
        ("nope", "unbound"),
        ("((lambda (x) x))", "arity"),
        ("(5)", "type"),
    ] {
        let out = ndvm(&["run", "--expr", src, "--json"]);
        assert_eq!(out.status.code(), Some(1), "{src}");
        assert_eq!(json(&out)["error"]["kind"], kind, "{src}");
    }
    let out = ndvm(&[
        "run",
        "--expr",
        "(loop ((i 0)) (recur (+ i 1)))",
        "--max-steps",
        "1000",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("eval steps limit of 1000"));
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        vec!["run"],
        vec!["run", "--expr", "x", "--lane", "x=1,2", "--lane", "y=1"],
        vec!["run", "--expr", "x", "--bind", "x=abc"],
        vec!["run", "/no/such/file.scm"],
        vec!["run", "--expr", "1", "--precision", "f16"],
        vec!["run", "--expr", "1", "--bindings", "/no/such.json"],
    ] {
        assert_eq!(ndvm(&args).status.code(), Some(2), "{args:?}");
    }
}

#[test]
fn table_output_and_f64() {
    let out = ndvm(&["run", "--expr", "(+ 0.1 0.2)", "--precision", "f64"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("0.30000000000000004"), "{text}");
    let out = ndvm(&["run", "--expr", "(list 1 'a (/ 1 0))"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("(1 a +inf.0)"));
}
