//! # ndvm-testdata
//!
//! The reference data ndvm's tests and benchmarks check against (`testdata/README.md` says where
//! each file comes from), and the one reader of it. The files live beside this crate, so a fresh
//! clone has them; `NDVM_TEST_DATA` points the reader at another folder with the same layout.
//!
//! Every function panics with the file's path on a missing or malformed file: this crate is for
//! tests, where that is the clearest failure.
//!
//! ```
//! let programs = ndvm_testdata::conformance_programs();
//! let kalman = ndvm_testdata::conformance_program("kalman2d_T80");
//! let obs = ndvm_testdata::conformance_matrix(&kalman).expect("kalman binds obs");
//! assert_eq!((obs.rows, obs.cols), (80, 2));
//! assert!(programs.len() >= 34);
//! ```

use serde_json::Value;
use std::path::PathBuf;

/// The folder holding the data: `NDVM_TEST_DATA`, else this crate's own folder.
pub fn dir() -> PathBuf {
    match std::env::var_os("NDVM_TEST_DATA") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")),
    }
}

/// The path of a data file, `rel` relative to [`dir`].
pub fn path(rel: &str) -> PathBuf {
    dir().join(rel)
}

/// The text of a data file.
pub fn text(rel: &str) -> String {
    let p = path(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| {
        panic!(
            "reference data {}: {e} (NDVM_TEST_DATA overrides the folder)",
            p.display()
        )
    })
}

/// A JSON file; non-finite numbers become the strings `"NaN"`, `"Infinity"`, `"-Infinity"`
/// (see [`num`]).
pub fn json(rel: &str) -> Value {
    serde_json::from_str(&python_json(&text(rel)))
        .unwrap_or_else(|e| panic!("reference data {rel}: {e}"))
}

/// A JSON-lines file, blank lines skipped; non-finite numbers as in [`json`].
pub fn jsonl(rel: &str) -> Vec<Value> {
    text(rel)
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(&python_json(l))
                .unwrap_or_else(|e| panic!("reference data {rel}, line {}: {e}", i + 1))
        })
        .collect()
}

/// A JSON number, or one of the strings `"Infinity"`, `"-Infinity"`, `"NaN"`.
pub fn num(v: &Value) -> Option<f64> {
    match v {
        Value::String(s) => match s.as_str() {
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            "NaN" => Some(f64::NAN),
            _ => None,
        },
        v => v.as_f64(),
    }
}

/// The programs of `conformance/oracle_refs.json`.
pub fn conformance_programs() -> Vec<Value> {
    let refs = json("conformance/oracle_refs.json");
    let programs = refs["programs"]
        .as_array()
        .expect("oracle_refs.json: `programs`");
    assert!(
        programs.len() >= 34,
        "expected the 34 conformance programs, found {}",
        programs.len()
    );
    programs.clone()
}

/// One conformance program, by name.
pub fn conformance_program(name: &str) -> Value {
    conformance_programs()
        .into_iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no conformance program `{name}`"))
}

/// A matrix binding of the reference data, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    pub name: String,
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<f64>,
}

/// The matrix binding of a conformance program, if it has one (the file stores it as the text
/// of a Python dict).
pub fn conformance_matrix(p: &Value) -> Option<Matrix> {
    let m = match &p["matrix"] {
        Value::Null => return None,
        Value::String(s) => serde_json::from_str::<Value>(&s.replace('\'', "\""))
            .unwrap_or_else(|e| panic!("conformance matrix of {}: {e}", p["name"])),
        v => v.clone(),
    };
    let field = |k: &str| m[k].as_u64().unwrap_or_else(|| panic!("matrix `{k}`")) as usize;
    let data = m["data"].as_array().expect("matrix `data`");
    Some(Matrix {
        name: m["name"].as_str().expect("matrix `name`").to_string(),
        rows: field("rows"),
        cols: field("cols"),
        data: data
            .iter()
            .map(|x| x.as_f64().expect("matrix cell"))
            .collect(),
    })
}

/// The reference differential-testing corpus, `fuzz/seed1234_n200.jsonl`.
pub fn fuzz_corpus() -> Vec<Value> {
    jsonl("fuzz/seed1234_n200.jsonl")
}

/// The co-search candidate streams, by file name.
pub const STREAMS: [&str; 2] = ["scalar_stream_247.jsonl", "recurrence_stream_80.jsonl"];

/// A co-search candidate stream (`cosearch/<file>`).
pub fn stream(file: &str) -> Vec<Value> {
    jsonl(&format!("cosearch/{file}"))
}

/// Python's `json` spells non-finite numbers as bare `Infinity`, `-Infinity` and `NaN`, which
/// JSON does not allow; outside strings, they become strings that [`num`] reads.
fn python_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_str = false;
    let mut escaped = false;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_str {
            in_str = escaped || c != '"';
            escaped = !escaped && c == '\\';
        } else if c == '"' {
            in_str = true;
        } else if let Some(tok) = ["-Infinity", "Infinity", "NaN"]
            .into_iter()
            .find(|t| rest.starts_with(t))
        {
            out.push('"');
            out.push_str(tok);
            out.push('"');
            rest = &rest[tok.len()..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_numbers_outside_strings_become_strings() {
        let v: Value = serde_json::from_str(&python_json(
            r#"{"a": NaN, "b": [-Infinity, Infinity], "s": "NaN \" Infinity"}"#,
        ))
        .expect("json");
        assert!(num(&v["a"]).expect("a").is_nan());
        assert_eq!(num(&v["b"][0]), Some(f64::NEG_INFINITY));
        assert_eq!(num(&v["b"][1]), Some(f64::INFINITY));
        assert_eq!(v["s"], "NaN \" Infinity");
    }

    #[test]
    fn every_file_reads() {
        assert_eq!(fuzz_corpus().len(), 200);
        assert_eq!(stream(STREAMS[0]).len(), 247);
        assert_eq!(stream(STREAMS[1]).len(), 80);
        let k = conformance_program("kalman2d_T80");
        let obs = conformance_matrix(&k).expect("obs");
        assert_eq!(obs.data.len(), 160);
        assert!((num(&k["oracle_result"]).expect("value") - 831.22).abs() < 0.01);
    }
}
