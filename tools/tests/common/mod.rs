//! What the CLI tests share: the `ndvm` binary, run in a scratch working folder, so the outputs
//! `ndvm fit` and `ndvm search` write by default (`ndvm-out/`) never land in the source tree.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// This test process's scratch folder (created on first use).
pub fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ndvm-cli-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

/// `ndvm`, to be given its arguments, working in [`scratch`].
pub fn command() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ndvm"));
    c.current_dir(scratch());
    c
}

/// Runs `ndvm args` in `dir` (a test of its own folder: nothing else writes there).
pub fn ndvm_in(dir: &std::path::Path, args: &[&str]) -> Output {
    std::fs::create_dir_all(dir).expect("working folder");
    command()
        .current_dir(dir)
        .args(args)
        .output()
        .expect("ndvm runs")
}

/// Runs `ndvm args` (standard input closed) and collects its output.
pub fn ndvm(args: &[&str]) -> Output {
    command().args(args).output().expect("ndvm runs")
}

/// A file of the repository's `scenes/` folder, as a path argument.
pub fn scene(name: &str) -> String {
    repo_file("scenes", name)
}

/// `folder/name` in the repository (`docs/examples`, `scenes`, …), as a path argument.
pub fn repo_file(folder: &str, name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(folder)
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// Makes a FIFO at `path` (false where `mkfifo` is missing: the caller skips that case).
pub fn mkfifo(path: &std::path::Path) -> bool {
    Command::new("mkfifo")
        .arg(path)
        .status()
        .is_ok_and(|s| s.success())
}
