//! Shared test helpers: locating the reference data and running programs.
#![allow(dead_code)]

use ndvm_engine::prelude::*;
use std::path::PathBuf;

/// `../shared/data` beside the repository (override with `NDVM_SHARED_DATA`).
pub fn shared_data() -> PathBuf {
    if let Ok(p) = std::env::var("NDVM_SHARED_DATA") {
        return PathBuf::from(p);
    }
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data");
    assert!(
        p.is_dir(),
        "reference data not found at {} (set NDVM_SHARED_DATA)",
        p.display()
    );
    p
}

pub fn read_json(rel: &str) -> serde_json::Value {
    let path = shared_data().join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&python_json(&text)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn read_jsonl(rel: &str) -> Vec<serde_json::Value> {
    let path = shared_data().join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(&python_json(l)).expect("json line"))
        .collect()
}

/// The reference data was written by Python, which spells non-finite numbers as bare
/// `Infinity`, `-Infinity` and `NaN`; turn them into strings that [`num`] understands.
fn python_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_str = false;
    let mut prev = ' ';
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c == '"' && prev != '\\' {
            in_str = !in_str;
        }
        if !in_str
            && let Some(tok) = ["-Infinity", "Infinity", "NaN"]
                .iter()
                .find(|t| rest.starts_with(**t))
        {
            out.push_str(&format!("\"{tok}\""));
            rest = &rest[tok.len()..];
            prev = 'x';
            continue;
        }
        out.push(c);
        prev = c;
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// A JSON number, or one of the strings `Infinity`, `-Infinity`, `NaN`.
pub fn num(v: &serde_json::Value) -> Option<f64> {
    match v {
        serde_json::Value::String(s) => match s.as_str() {
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            "NaN" => Some(f64::NAN),
            _ => None,
        },
        v => v.as_f64(),
    }
}

/// Runs `src` with per-binding values (scalars broadcast) and returns the evaluation.
pub fn run<R: Real>(src: &str, bindings: &Bindings<R>, grad: bool) -> Result<Evaluation<R>> {
    let program = Program::new(src, &bindings.names())?;
    let mut vm = Vm::<R>::default();
    evaluate(&mut vm, &program, bindings, grad)
}

pub fn numbers<R: Copy + std::fmt::Debug>(e: &Evaluation<R>) -> Vec<R> {
    match &e.result {
        Output::Numbers(v) => v.clone(),
        other => panic!("expected numbers, got {other:?}"),
    }
}

pub fn close(a: f64, b: f64, atol: f64, rtol: f64) -> bool {
    ndvm_engine::check::close(a, b, atol, rtol)
}
