//! A bounded fuzz campaign over everything around the programs: scenes, bindings files, CSV data
//! and flags, mutated at random from valid seeds and run through the real `ndvm` binary under a
//! memory cap and a time limit. Every run must end with exit status 0, 1, 2 or 130 (never a
//! panic, an abort, a signal or a hang).
//!
//! CI runs `NDVM_CLI_FUZZ_CASES` cases (default 120); a long campaign:
//! `NDVM_CLI_FUZZ_CASES=5000 NDVM_CLI_FUZZ_SEED=7 cargo test -p ndvm-cli --release --test cli_fuzz`.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Wall-clock limit of one run; a run still going is a hang.
const TIME_LIMIT: Duration = Duration::from_secs(20);

/// Virtual memory cap of one run (KiB, for `ulimit -v`).
const MEMORY_KIB: u64 = 4 << 20;

const SCENE: &str = r#"Scene(
    candidates: [
        Inline(name: "decay", src: "(* A (exp (- 0 (* k t))))"),
        Inline(name: "line", src: "(+ A (* k t))"),
    ],
    parameters: Parameters(names: ["A", "k"], init: {"A": 1.0, "k": 0.5},
                           restarts: Restarts(count: 2, scale: 0.1, seed: 1),
                           bounds: {"k": Bounds(min: Some(0.0))}),
    inputs: {"c": Number(1.0)},
    data: Some(Csv(path: "data.csv", columns: {"t": "t"}, target: "y", split: Split(train: 0.75, seed: 2))),
    loss: Mse,
    optimizer: Adam(lr: 0.05),
    steps: 20,
    tolerance: None,
    threads: Some(2),
)"#;

const BINDINGS: &str = r#"{"scalars": {"a": 1.5, "b": -2.0},
 "lanes": {"x": [0.5, 1.0, 2.0]},
 "matrices": {"m": {"rows": 2, "cols": 2, "data": [1, 2, 3, 4]}}}"#;

const PROGRAM: &str = "(+ (* a (trace m)) (* b x))";

const CSV: &str = "t,y\n0,2.0\n0.5,1.6\n1,1.2\n1.5,0.95\n2,0.74\n2.5,0.57\n3,0.45\n3.5,0.35\n";

/// Tokens a mutation may put in place of a number or a word.
const NASTY: &[&str] = &[
    "0",
    "-1",
    "1e308",
    "-1e308",
    "1e-320",
    "NaN",
    "inf",
    "-inf",
    "18446744073709551615",
    "9223372036854775808",
    "4294967296",
    "65536",
    "\"\"",
    "[]",
    "{}",
    "None",
    "Some(0)",
    "(",
    ")",
    ",",
    "\"a\"",
    "\"t\"",
    "\"k\"",
    "-0.0",
    "1000000000000",
];

fn mutate(text: &str, rng: &mut StdRng) -> String {
    let mut s = text.to_string();
    for _ in 0..rng.random_range(1..4) {
        if s.is_empty() {
            break;
        }
        let at = rng.random_range(0..s.len());
        let at = (0..=at).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0);
        match rng.random_range(0..5) {
            // Replace the number or word at `at` with a nasty token.
            0 | 1 => {
                let end = s[at..]
                    .find(|c: char| !(c.is_alphanumeric() || c == '.' || c == '-' || c == '_'))
                    .map_or(s.len(), |e| at + e);
                let token = NASTY[rng.random_range(0..NASTY.len())];
                s.replace_range(at..end, token);
            }
            // Delete a span.
            2 => {
                let end = (at + rng.random_range(1..12)).min(s.len());
                let end = (end..=s.len())
                    .find(|&i| s.is_char_boundary(i))
                    .unwrap_or(s.len());
                s.replace_range(at..end, "");
            }
            // Duplicate a span.
            3 => {
                let end = (at + rng.random_range(1..40)).min(s.len());
                let end = (end..=s.len())
                    .find(|&i| s.is_char_boundary(i))
                    .unwrap_or(s.len());
                let copy = s[at..end].to_string();
                s.insert_str(end, &copy);
            }
            // Flip a byte to another printable character.
            _ => {
                let c = (rng.random_range(32u8..127)) as char;
                let end = (at + 1..=s.len())
                    .find(|&i| s.is_char_boundary(i))
                    .unwrap_or(s.len());
                s.replace_range(at..end, &c.to_string());
            }
        }
    }
    s
}

/// Runs `ndvm args…` in `dir` under the caps; the exit status, or a description of how it
/// ended badly.
fn run(dir: &Path, args: &[String]) -> Result<i32, String> {
    let quoted: Vec<String> = args
        .iter()
        .map(|a| format!("'{}'", a.replace('\'', "'\\''")))
        .collect();
    let script = format!(
        "ulimit -v {MEMORY_KIB}; exec '{}' {}",
        env!("CARGO_BIN_EXE_ndvm"),
        quoted.join(" ")
    );
    // Standard error goes to a file: a pipe read only at the end could fill and block the run.
    let err_path = dir.join("stderr.txt");
    let err_file = std::fs::File::create(&err_path).map_err(|e| e.to_string())?;
    let mut child = Command::new("sh")
        .args(["-c", &script])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err_file)
        .spawn()
        .map_err(|e| e.to_string())?;
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            let mut err = String::new();
            if let Ok(mut e) = std::fs::File::open(&err_path) {
                let _ = e.read_to_string(&mut err);
            }
            return match status.code() {
                Some(c @ (0 | 1 | 2 | 130)) if !err.contains("panicked") => Ok(c),
                other => Err(format!(
                    "exit {other:?}: {}",
                    err.chars().take(600).collect::<String>()
                )),
            };
        }
        if start.elapsed() > TIME_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("still running after {TIME_LIMIT:?}"));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn mutated_scenes_bindings_data_and_flags_end_cleanly() {
    let cases: usize = std::env::var("NDVM_CLI_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(120);
    let seed: u64 = std::env::var("NDVM_CLI_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let mut rng = StdRng::seed_from_u64(seed);
    let dir: PathBuf = std::env::temp_dir().join(format!("ndvm-cli-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let flags = [
        "--threads",
        "--steps",
        "--top",
        "--max-steps",
        "--max-heap-cells",
        "--max-depth",
        "--max-tape-nodes",
        "--max-payload-bytes",
        "--repeat",
    ];
    let mut failures = Vec::new();
    let mut codes = [0usize; 4];
    for case in 0..cases {
        let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).expect("write");
        write("scene.ron", SCENE);
        write("data.csv", CSV);
        write("b.json", BINDINGS);
        write("p.scm", PROGRAM);
        let kind = rng.random_range(0..4);
        let strings = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let run_args = ["run", "p.scm", "--bindings", "b.json", "--grad"];
        let mut args: Vec<String> = match kind {
            0 => {
                write("scene.ron", &mutate(SCENE, &mut rng));
                strings(&["fit", "scene.ron"])
            }
            1 => {
                write("data.csv", &mutate(CSV, &mut rng));
                strings(&["fit", "scene.ron", "--json"])
            }
            2 => {
                write("b.json", &mutate(BINDINGS, &mut rng));
                strings(&run_args)
            }
            _ => {
                write("p.scm", &mutate(PROGRAM, &mut rng));
                let mut a = strings(&run_args);
                a.push("--json".into());
                a
            }
        };
        // Now and then an extreme flag value.
        if rng.random_bool(0.3) {
            let flag = flags[rng.random_range(0..flags.len())];
            let ok_for_fit = matches!(flag, "--threads" | "--steps" | "--top");
            if (kind < 2) == ok_for_fit {
                args.push(flag.into());
                args.push(NASTY[rng.random_range(0..NASTY.len())].into());
            }
        }
        match run(&dir, &args) {
            Ok(code) => codes[[0, 1, 2, 130].iter().position(|&c| c == code).unwrap_or(0)] += 1,
            Err(why) => {
                let inputs: Vec<String> = ["scene.ron", "data.csv", "b.json", "p.scm"]
                    .iter()
                    .map(|f| {
                        format!(
                            "--- {f}\n{}",
                            std::fs::read_to_string(dir.join(f)).unwrap_or_default()
                        )
                    })
                    .collect();
                failures.push(format!(
                    "case {case} {args:?}: {why}\n{}",
                    inputs.join("\n")
                ));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        failures.is_empty(),
        "{} of {cases} failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    // The campaign must exercise both outcomes.
    assert!(
        codes[0] > 0 && codes[1] + codes[2] > 0,
        "exit codes {codes:?}"
    );
}
