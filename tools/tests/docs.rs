//! The documentation's examples run: every ```scheme block of `docs/language.md` ending in
//! `;; => RESULT` must print RESULT, and every example program under `docs/examples` must run.

use ndvm_engine::prelude::*;
use std::path::Path;

fn docs() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs")
}

/// The result as the CLI writes it (tensors as the program text that builds them).
fn printed(src: &str) -> Result<String> {
    let program = Program::new(src, &[])?;
    let mut vm = Vm::<f32>::default();
    let v = vm.eval(&program, &Bindings::new(), false)?;
    Ok(vm.render(&program, v, 0))
}

#[test]
fn language_guide_examples_print_what_they_claim() {
    let text = std::fs::read_to_string(docs().join("language.md")).expect("docs/language.md");
    let mut checked = 0;
    for block in text.split("```scheme\n").skip(1) {
        let body = block.split("```").next().unwrap_or("");
        let Some((src, want)) = body.split_once(";; =>") else {
            continue;
        };
        let got = printed(src).unwrap_or_else(|e| panic!("{src}\n{}", e.render(src)));
        assert_eq!(got, want.trim(), "example:\n{src}");
        checked += 1;
    }
    assert!(checked >= 14, "only {checked} examples found");
}

#[test]
fn example_programs_run() {
    let dir = docs().join("examples");
    let mut ran = 0;
    for entry in std::fs::read_dir(&dir).expect("docs/examples").flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "scm" && e != "nbc") {
            continue;
        }
        let src = std::fs::read_to_string(&path).expect("read");
        // The header says how to run it: reuse its flags.
        let line = src
            .lines()
            .find(|l| l.contains("Run it:"))
            .expect("a `Run it:` line");
        let args: Vec<&str> = line
            .split("ndvm ")
            .nth(1)
            .expect("command")
            .split_whitespace()
            .collect();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ndvm"))
            .current_dir(docs().join(".."))
            .args(&args)
            .output()
            .expect("runs");
        assert!(
            out.status.success(),
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        ran += 1;
    }
    assert!(ran >= 3);
}
