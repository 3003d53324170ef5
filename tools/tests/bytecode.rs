//! The bytecode client end to end: `ndvm run` on `.nbc`, `.nbcb` and `.nbc.json` files and with
//! `--bytecode`, `ndvm asm` between the forms, and located errors with exit status 1.

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn ndvm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ndvm"))
        .current_dir(root())
        .args(args)
        .output()
        .expect("runs ndvm")
}

fn json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// The flags of an example's `Run it:` line, after the program path.
fn run_flags(file: &str) -> Vec<String> {
    let src = std::fs::read_to_string(root().join(file)).expect("example");
    let line = src.lines().find(|l| l.contains("Run it:")).expect("Run it");
    line.split_whitespace()
        .skip_while(|w| !w.starts_with("docs/examples/"))
        .skip(1)
        .map(str::to_string)
        .collect()
}

/// `ndvm run FILE FLAGS… --json [extra]` as JSON.
fn run_json(file: &str, flags: &[String], extra: &[&str]) -> Value {
    let mut args = vec!["run", file];
    args.extend(flags.iter().map(String::as_str));
    args.push("--json");
    args.extend_from_slice(extra);
    json(&ndvm(&args))
}

#[test]
fn nbc_files_and_compiled_dialect_match_the_walk() {
    for w in [
        "w1_closed_form",
        "w2_counted_loop",
        "w3_branch",
        "w4_matvec",
        "newton_sqrt",
    ] {
        let scm = format!("docs/examples/{w}.scm");
        let nbc = format!("docs/examples/{w}.nbc");
        let flags = run_flags(&scm);
        assert_eq!(flags, run_flags(&nbc), "{w}: the two Run-it lines differ");
        let walk = run_json(&scm, &flags, &[]);
        let asm = run_json(&nbc, &flags, &[]);
        let compiled = run_json(&scm, &flags, &["--bytecode"]);
        assert_eq!(walk["client"], "walk");
        assert_eq!(asm["client"], "bytecode");
        assert_eq!(compiled["client"], "bytecode");
        for key in ["result", "grads", "lanes"] {
            assert_eq!(walk[key], asm[key], "{w}: {key}");
            assert_eq!(walk[key], compiled[key], "{w}: {key}");
        }
    }
}

#[test]
fn asm_writes_binary_and_json_forms_that_run_the_same() {
    let dir = std::env::temp_dir().join(format!("ndvm-asm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let bin = dir.join("w3.nbcb");
    let js = dir.join("w3.nbc.json");
    let (bin_s, js_s) = (bin.to_string_lossy(), js.to_string_lossy());
    let inputs = ["--inputs", "a,b,x"];
    for (to, out) in [("nbcb", &bin_s), ("json", &js_s)] {
        let mut args = vec!["asm", "docs/examples/w3_branch.nbc", "--to", to, "-o", out];
        args.extend_from_slice(&inputs);
        let o = ndvm(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let flags = run_flags("docs/examples/w3_branch.nbc");
    let want = run_json("docs/examples/w3_branch.nbc", &flags, &[]);
    for file in [&bin_s, &js_s] {
        let got = run_json(file, &flags, &[]);
        assert_eq!(got["result"], want["result"], "{file}");
        assert_eq!(got["grads"], want["grads"], "{file}");
    }
    // A corrupt binary is a clean error.
    let mut bytes = std::fs::read(&bin).expect("binary");
    bytes.truncate(bytes.len() - 3);
    std::fs::write(&bin, &bytes).expect("write");
    let o = ndvm(&[
        "run", &bin_s, "--bind", "a=1", "--bind", "b=1", "--bind", "x=1",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("truncated"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_bytecode_exits_1_with_the_instruction_and_line() {
    let dir = std::env::temp_dir().join(format!("ndvm-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let cases = [
        ("PUSH 1\nADD\nRET\n", "line 2", "stack underflow"),
        ("PUSH 1\nLOOP 2\nPUSH 1\nPOP\n", "line 2", "has no END"),
        ("PUSH 1\nJUMP 40\n", "line 2", "out of range"),
        (
            "LOAD x\nPUSH 0\nLT\nLOAD x\nMUL\nRET\n",
            "line 5",
            "instruction 4 (`MUL`)",
        ),
    ];
    for (i, (src, at, says)) in cases.iter().enumerate() {
        let file = dir.join(format!("bad{i}.nbc"));
        std::fs::write(&file, src).expect("write");
        let f = file.to_string_lossy();
        let o = ndvm(&["run", &f, "--lane", "x=1,-1", "--json"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{src}: {err}");
        assert!(err.contains(at) && err.contains(says), "{src}: {err}");
        let v: Value = serde_json::from_slice(&o.stdout).expect("JSON error");
        assert!(
            v["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains(says)),
            "{v}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}
