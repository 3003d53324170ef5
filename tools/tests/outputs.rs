//! Hostile output paths (hostile input, round two): an output replaces only a regular file, by a
//! temporary file and a rename in its folder — never through a symbolic link, over a device, a
//! FIFO or a folder — two outputs never share a path, and a write that fails (a full disk) is an
//! error, not exit 0.

mod common;
use common::{command, mkfifo, ndvm_in, repo_file, scene, scratch};
use std::path::PathBuf;

/// The inputs of `docs/examples/w1_closed_form.nbc`.
const W1: &str = "a,b,c,w,t";

fn example(name: &str) -> String {
    repo_file("docs/examples", name)
}

/// A fresh folder of this test's own.
fn folder(name: &str) -> PathBuf {
    let d = scratch().join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("folder");
    d
}

/// Exit status 2, `message` on standard error, no panic.
fn refused(out: &std::process::Output, message: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(message), "expected `{message}` in\n{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn asm_to_a_full_standard_output_fails() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        return; // no /dev/full on this system
    };
    for to in ["nbc", "json"] {
        let out = command()
            .args([
                "asm",
                &example("w1_closed_form.nbc"),
                "--inputs",
                W1,
                "--to",
                to,
            ])
            .stdout(full.try_clone().expect("dup"))
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains("cannot write the output: No space left"),
            "{err}"
        );
    }
}

#[test]
fn asm_refuses_a_symbolic_link_and_keeps_a_previous_file_whole() {
    let dir = folder("asm-link");
    let target = dir.join("target.txt");
    std::fs::write(&target, "precious").expect("target");
    let link = dir.join("link.nbc");
    std::os::unix::fs::symlink(&target, &link).expect("symlink");
    let out = ndvm_in(
        &dir,
        &[
            "asm",
            &example("w1_closed_form.nbc"),
            "--inputs",
            W1,
            "-o",
            "link.nbc",
        ],
    );
    refused(&out, "it is a symbolic link");
    assert_eq!(std::fs::read_to_string(&target).expect("read"), "precious");
    // Over a regular file: replaced whole, and nothing left beside it.
    std::fs::write(dir.join("prev.nbc"), "old").expect("prev");
    let out = ndvm_in(
        &dir,
        &[
            "asm",
            &example("w1_closed_form.nbc"),
            "--inputs",
            W1,
            "-o",
            "prev.nbc",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(dir.join("prev.nbc")).expect("read");
    assert!(text.contains("LOAD a"), "{text}");
    let names: Vec<_> = std::fs::read_dir(&dir).expect("dir").collect();
    assert_eq!(names.len(), 3, "only target, link and prev.nbc: {names:?}");
}

#[test]
fn fit_and_profile_refuse_a_fifo_a_folder_and_a_link_as_outputs() {
    let dir = folder("fit-outputs");
    std::fs::create_dir_all(dir.join("a-folder")).expect("folder");
    std::os::unix::fs::symlink("/dev/null", dir.join("null-link")).expect("symlink");
    let mut cases = vec![
        ("a-folder", "it is a folder"),
        ("null-link", "it is a symbolic link"),
    ];
    if mkfifo(&dir.join("fifo")) {
        cases.push(("fifo", "not a regular file"));
    }
    let decay = scene("decay_csv.scene.ron");
    for (name, message) in cases {
        refused(&ndvm_in(&dir, &["fit", &decay, "--out", name]), message);
        refused(
            &ndvm_in(&dir, &["profile", &decay, "--steps", "1", "--trace", name]),
            message,
        );
        refused(
            &ndvm_in(&dir, &["fit", &decay, "--out", "r.json", "--losses", name]),
            message,
        );
    }
    // Nothing was replaced.
    use std::os::unix::fs::FileTypeExt;
    let kind = |n: &str| {
        std::fs::symlink_metadata(dir.join(n))
            .expect("still there")
            .file_type()
    };
    assert!(kind("a-folder").is_dir() && kind("null-link").is_symlink());
    if dir.join("fifo").exists() {
        assert!(kind("fifo").is_fifo());
    }
}

#[test]
fn fit_refuses_one_path_for_two_outputs() {
    let dir = folder("fit-same-path");
    let decay = scene("decay_csv.scene.ron");
    for (out, losses) in [("x.json", "x.json"), ("x.json", "./x.json")] {
        refused(
            &ndvm_in(&dir, &["fit", &decay, "--out", out, "--losses", losses]),
            "would both be written to",
        );
    }
    assert!(!dir.join("x.json").exists());
}

#[test]
fn search_refuses_a_log_that_is_a_symbolic_link() {
    let dir = folder("search-link");
    let out_dir = dir.join("out");
    std::fs::create_dir_all(&out_dir).expect("out");
    std::fs::write(dir.join("target.txt"), "precious").expect("target");
    std::os::unix::fs::symlink(dir.join("target.txt"), out_dir.join("calibrations.jsonl"))
        .expect("symlink");
    let out = ndvm_in(
        &dir,
        &[
            "search",
            &scene("search_scalar.scene.ron"),
            "--calibrations",
            "8",
            "--out",
            "out",
        ],
    );
    refused(&out, "it is a symbolic link");
    let target = std::fs::read_to_string(dir.join("target.txt")).expect("read");
    assert_eq!(target, "precious");
}
