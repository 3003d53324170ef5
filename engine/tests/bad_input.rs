//! Bad input: truncated, unbalanced and randomly mutated programs each give a value or a clean
//! error — never a panic, a hang or unbounded memory (every walk runs under small limits).

mod common;
use common::*;
use ndvm_engine::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Valid programs to mutate: the golden corpus, the conformance programs and the fuzz corpus.
fn seeds() -> Vec<String> {
    let mut out = Vec::new();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    for e in std::fs::read_dir(dir).expect("golden").flatten() {
        out.push(std::fs::read_to_string(e.path()).expect("read"));
    }
    for p in read_json("conformance/oracle_refs.json")["programs"]
        .as_array()
        .expect("programs")
    {
        out.push(p["src"].as_str().unwrap_or("").to_string());
    }
    for p in read_jsonl("fuzz/seed1234_n200.jsonl").iter().take(60) {
        out.push(p["src"].as_str().unwrap_or("").to_string());
    }
    out.sort();
    out
}

const ATOMS: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "'",
    ";",
    "#",
    ".",
    "\"",
    "`",
    ",",
    "#t",
    "#f",
    "#x",
    "0",
    "-0.0",
    "1e308",
    "1e-320",
    "-inf",
    "+nan.0",
    "99999999999999999999999",
    "x",
    "a",
    "car",
    "cdr",
    "lambda",
    "define",
    "recur",
    "loop",
    "if",
    "else",
    "=>",
    "let*",
    "apply",
    "map",
    "list-ref",
    "vec",
    "mat",
    "ref",
    "inv",
    "det",
    "logdet",
    "matmul",
    "matvec",
    "transpose",
    "normalize",
    "cross",
    "eye",
    "zeros",
    "1e9",
    "-3.5",
    "[1 2 3]",
    "(eye 4)",
    "(mat [1 2] [2 4])",
    "(ref obs 79)",
    "()",
    "(car 1)",
    "(/ 0 0)",
    "(loop ((i 0)) (recur i))",
];

fn mutate(src: &str, rng: &mut ChaCha8Rng) -> String {
    let mut s: Vec<u8> = src.as_bytes().to_vec();
    let rounds = rng.random_range(1..4);
    for _ in 0..rounds {
        let n = s.len().max(1);
        match rng.random_range(0..8) {
            0 => {
                let i = rng.random_range(0..n);
                if i < s.len() {
                    s[i] = b"()[]'; #.\"`,0123456789+-eax?!\n"[rng.random_range(0..30)];
                }
            }
            1 => s.truncate(rng.random_range(0..n)),
            2 => {
                if let Some(i) = s.iter().position(|&c| c == b'(' || c == b')') {
                    let j = (i + rng.random_range(0..n)) % n;
                    if j < s.len() && (s[j] == b'(' || s[j] == b')') {
                        s.remove(j);
                    } else {
                        s.remove(i);
                    }
                }
            }
            3 => {
                let i = rng.random_range(0..n).min(s.len());
                let c = if rng.random_bool(0.5) { b'(' } else { b')' };
                s.insert(i, c);
            }
            4 => {
                let i = rng.random_range(0..n).min(s.len());
                let atom = ATOMS[rng.random_range(0..ATOMS.len())];
                s.splice(i..i, format!(" {atom} ").bytes());
            }
            5 => {
                // swap two atoms
                let text = String::from_utf8_lossy(&s).into_owned();
                let mut words: Vec<&str> = text.split(' ').collect();
                if words.len() > 2 {
                    let (i, j) = (
                        rng.random_range(0..words.len()),
                        rng.random_range(0..words.len()),
                    );
                    words.swap(i, j);
                }
                s = words.join(" ").into_bytes();
            }
            6 => {
                let depth = rng.random_range(100..12_000);
                let mut t = "(list ".repeat(depth).into_bytes();
                t.extend_from_slice(&s);
                t.extend(std::iter::repeat_n(b')', depth));
                s = t;
            }
            _ => {
                let i = rng.random_range(0..n).min(s.len());
                let j = (i + rng.random_range(0..40)).min(s.len());
                let dup = s[i..j].to_vec();
                s.splice(j..j, dup);
            }
        }
    }
    String::from_utf8_lossy(&s).into_owned()
}

fn run_untrusted(src: &str, b: &Bindings<f32>) {
    let Ok(program) = Program::new(src, &b.names()) else {
        return;
    };
    let mut vm = Vm::<f32>::new(Limits::small());
    let _ = evaluate(&mut vm, &program, b, true);
}

#[test]
fn ten_thousand_mutated_programs_never_panic() {
    let count: usize = std::env::var("NDVM_MUTATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(12_000);
    let seeds = seeds();
    let mut rng = ChaCha8Rng::seed_from_u64(20261122);
    let mut b = Bindings::<f32>::new();
    for name in [
        "a", "b", "c", "d", "x", "z", "r", "q", "p0", "p1", "p2", "p3", "alpha", "beta",
    ] {
        b.lanes(name, vec![0.5, 1.5, -2.0]);
    }
    // The Kalman program's observations, a different matrix per lane.
    let obs = (0..3)
        .map(|l| (0..160).map(|e| ((e * 7 + l) % 11) as f32 * 0.1).collect())
        .collect();
    b.lane_matrices("obs", 80, 2, obs);
    let mut errors = 0usize;
    for k in 0..count {
        let src = mutate(&seeds[k % seeds.len()], &mut rng);
        let outcome = std::panic::catch_unwind(|| run_untrusted(&src, &b));
        if outcome.is_err() {
            let shown: String = src.chars().take(600).collect();
            panic!("mutated program #{k} panicked:\n{shown}");
        }
        errors += usize::from(Program::new(&src, &b.names()).is_err());
    }
    assert!(
        errors > count / 10,
        "mutations should produce many syntax errors ({errors})"
    );
}

#[test]
fn truncations_and_unbalanced_programs_are_located_syntax_errors() {
    let src = "(define (f x) (let ((y [x 2])) (car (list y 'q))))\n(f 1)";
    for cut in 1..src.len() {
        let t = &src[..cut];
        if let Err(e) = Program::new(t, &[]) {
            assert!(e.span.is_some(), "{t:?}: {e}");
        }
    }
    for bad in [
        ")",
        "(()",
        "(a))",
        "[1 2)",
        "'",
        "#",
        "(quote)",
        "(lambda)",
        "(let ((x)) x)",
    ] {
        let e = Program::new(bad, &[]).expect_err(bad);
        assert_eq!(e.kind, ErrorKind::Syntax, "{bad}");
        assert!(e.span.is_some());
    }
}
