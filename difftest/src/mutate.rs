//! Mutations of valid programs for the bad-input tests: byte flips, truncation, deleted and
//! duplicated parentheses, spliced atoms (huge and non-finite literals, keywords, structural
//! primitives), swapped atoms, deep nesting and duplicated spans.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Tokens and fragments spliced into programs: delimiters, edge-case numbers, keywords and
/// primitives with structural operands.
pub const ATOMS: &[&str] = &[
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

/// One to three random edits of `src`.
pub fn mutate(src: &str, rng: &mut ChaCha8Rng) -> String {
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
