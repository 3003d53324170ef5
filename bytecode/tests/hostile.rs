//! Bad bytecode gets a located error, never a panic, a hang or a silently wrong number: each
//! kind of defect by hand, then fuzzed (random bytes, every truncation of a real file, random
//! assembly text, random instruction streams).

mod common;

use ndvm_bytecode::prelude::*;
use ndvm_engine::prelude::*;
use proptest::prelude::*;

/// The error assembling (or, if it assembles, running) `src` over two lanes of `x`.
fn error(src: &str) -> Error {
    let mut b = Bindings::<f64>::new();
    b.lanes("x", vec![0.25, 0.75]);
    let limits = Limits {
        eval_steps: 100_000,
        ..Limits::default()
    };
    let code = match assemble(src, &["x"], &Registry::default()) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let mut vm = Vm::<f64>::new(limits);
    match Runner::new().run(&mut vm, &code, &b, true) {
        Ok(v) => panic!("`{src}` ran: {v:?}"),
        Err(e) => e,
    }
}

/// The 1-based line an error points at.
fn line(src: &str, e: &Error) -> usize {
    let span = e.span.unwrap_or_else(|| panic!("unlocated: {e}"));
    span.line_col(src).0
}

#[track_caller]
fn check(src: &str, kind: ErrorKind, at_line: usize, says: &str) {
    let e = error(src);
    assert_eq!(e.kind, kind, "{src}: {e}");
    assert_eq!(line(src, &e), at_line, "{src}: {e}");
    assert!(
        e.message.contains(says),
        "{src}: `{}` lacks `{says}`",
        e.message
    );
}

#[test]
fn static_defects_are_located() {
    use ErrorKind::*;
    check("PUSH 1\nADD\nRET", Syntax, 2, "stack underflow");
    check("PUSH 1\nJUMP 99\nRET", Syntax, 2, "out of range");
    check("PUSH 1\nLOOP 3\nPUSH 2\nPOP\n", Syntax, 2, "has no END");
    check("PUSH 1\nIF\nPUSH 2\n", Syntax, 2, "has no END");
    check("PUSH 1\nEND\nRET", Syntax, 2, "without an open");
    check("ELSE\n", Syntax, 1, "without an open IF");
    check("PUSH 1\nFROB 2\n", Syntax, 2, "unknown instruction");
    check("PUSH 1\nJUMP nowhere\n", Syntax, 2, "unknown label");
    check("LOAD y\nRET", Unbound, 1, "unknown input `y`");
    check(
        "LOAD x\nCALL frobnicate 1\nRET",
        Unbound,
        2,
        "unknown primitive",
    );
    check("LOAD x\nCALL exp 2\nRET", Arity, 2, "takes");
    check("PUSH one\n", Syntax, 1, "not a number");
    check("GET y\nRET", Unbound, 1, "never set");
    check(
        "PUSH 1\nPUSH 1\nIF\nin: PUSH 2\nPOP\nEND\nJUMP in\n",
        Syntax,
        7,
        "into a block",
    );
    check(
        "PUSH 1\nIF\nJUMP out\nEND\nout: PUSH 1\nRET",
        Syntax,
        3,
        "leaves an IF forward",
    );
    check(
        "PUSH 1\nLOOP 2\nJUMP 0\nEND\nRET",
        Syntax,
        3,
        "cannot leave a LOOP",
    );
    check(
        "PUSH 1\nEXITIF\nPUSH 1\nRET",
        Syntax,
        2,
        "directly in a LOOP",
    );
    check(
        "PUSH 1\nIF\nPUSH 2\nRET\nEND\nRET",
        Syntax,
        4,
        "RET inside a block",
    );
    check(
        "PUSH 1\nIF\nPUSH 2\nEND\nRET",
        Syntax,
        4,
        "leave the stack as it found it",
    );
    check("LOOP 3\nPUSH 1\nEND\nRET", Syntax, 3, "leave the stack");
    check(
        "PUSH 1\nIF\nPUSH 2\nPUSH 3\nELSE\nPUSH 4\nEND\nRET",
        Syntax,
        7,
        "differs by path",
    );
    check(
        "PUSH 1\nIF\nPOP\nPUSH 2\nELSE\nPUSH 3\nEND\nRET",
        Syntax,
        3,
        "stack underflow",
    );
    check("PUSH 1\nPOP\n", Syntax, 2, "empty stack");
    check("; only a comment\n", Syntax, 1, "empty");
}

#[test]
fn runtime_defects_are_located() {
    use ErrorKind::*;
    // A boolean where a number must be, on line 4.
    check(
        "LOAD x\nPUSH 0.5\nLT\nLOAD x\nADD\nRET",
        Type,
        5,
        "must be a number",
    );
    // Lanes disagree at a BRANCH (a per-lane test needs IF).
    check(
        "LOAD x\nPUSH 0.5\nLT\nBRANCH done\nPUSH 1\nRET\ndone: PUSH 2\nRET",
        Divergence,
        4,
        "diverge",
    );
    // An endless jump loop stops at the step limit.
    check("top: JUMP top\n", Limit, 1, "eval steps");
    // A local set in one arm only is unset after the merge.
    check(
        "LOAD x\nPUSH 0.5\nLT\nIF\nPUSH 1\nSET y\nEND\nGET y\nRET",
        Unbound,
        8,
        "before it is set",
    );
    // Arms that leave different kinds cannot be merged per lane.
    check(
        "LOAD x\nPUSH 0.5\nLT\nIF\nPUSH 1\nELSE\nLOAD x\nPUSH 0\nGT\nEND\nRET",
        Divergence,
        4,
        "diverge",
    );
    // A loop count that differs across lanes.
    check(
        "LOAD x\nLOOP\nEND\nPUSH 1\nRET",
        Divergence,
        2,
        "differs across lanes",
    );
}

#[test]
fn the_empty_source_is_an_error_not_a_panic() {
    let e = assemble("", &[], &Registry::default()).expect_err("empty");
    assert_eq!(e.kind, ErrorKind::Syntax);
}

#[test]
fn every_truncation_of_a_real_binary_is_an_error() {
    let reg = Registry::default();
    for w in common::WORKLOADS {
        let b = common::inputs::<f32>(w, 1, 0);
        let code =
            assemble(&common::example(&format!("{w}.nbc")), &b.names(), &reg).expect("assembles");
        let bytes = code.to_binary();
        for cut in 0..bytes.len() {
            let e = Code::from_binary(&bytes[..cut], &reg).expect_err("truncated");
            assert_eq!(e.kind, ErrorKind::Syntax, "{w} cut at {cut}: {e}");
        }
        let mut long = bytes.clone();
        long.push(0);
        assert!(Code::from_binary(&long, &reg).is_err());
    }
}

/// Runs whatever `code` is over two lanes with small limits; only a panic fails.
fn run_anything(code: &Code) {
    let mut b = Bindings::<f32>::new();
    for name in code.inputs() {
        b.lanes(name, vec![0.5, -2.0]);
    }
    let limits = Limits {
        eval_steps: 20_000,
        tape_nodes: 20_000,
        recursion_depth: 200,
        payload_bytes: 1 << 20,
        ..Limits::default()
    };
    let mut vm = Vm::<f32>::new(limits);
    if let Ok(e) = Runner::new().evaluate(&mut vm, code, &b, true) {
        assert_eq!(e.lanes, 2);
    }
}

const WORDS: &[&str] = &[
    "PUSH 1",
    "PUSH 0.5",
    "PUSH -2",
    "LOAD x",
    "LOAD y",
    "GET a",
    "SET a",
    "GET b",
    "SET b",
    "DUP",
    "POP",
    "SWAP",
    "ADD",
    "SUB",
    "MUL",
    "DIV",
    "NEG",
    "EXP",
    "LOG",
    "SIN",
    "COS",
    "DOT",
    "LT",
    "LE",
    "GT",
    "GE",
    "EQ",
    "NOT",
    "CALL sqrt",
    "CALL vec 2",
    "CALL + 3",
    "CALL norm",
    "IF",
    "ELSE",
    "END",
    "LOOP 3",
    "LOOP",
    "EXITIF",
    "JUMP L0",
    "JUMP L1",
    "BRANCH L0",
    "BRANCH L1",
    "RET",
    "L0:",
    "L1:",
    "JUMP 7",
    "CALL car",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("NDVM_FUZZ_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(2000)
    ))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let mut framed = b"NBC1".to_vec();
        framed.extend_from_slice(&bytes);
        for input in [&bytes[..], &framed[..]] {
            if let Ok(code) = Code::from_binary(input, &Registry::default()) {
                run_anything(&code);
            }
        }
    }

    #[test]
    fn random_assembly_never_panics(words in proptest::collection::vec(0..WORDS.len(), 1..40)) {
        let src: String = words.iter().map(|&i| format!("{}\n", WORDS[i])).collect();
        if let Ok(code) = assemble(&src, &["x", "y"], &Registry::default()) {
            run_anything(&code);
        }
    }

    #[test]
    fn random_json_never_panics(text in "\\PC{0,120}") {
        let _ = Code::from_json(&text, &Registry::default());
        let wrapped = format!(r#"{{"format":"ndvm-bytecode","version":1,"code":[{text}]}}"#);
        if let Ok(code) = Code::from_json(&wrapped, &Registry::default()) {
            run_anything(&code);
        }
    }
}

#[test]
fn deeply_nested_dialect_compiles_without_overflowing_the_stack() {
    // As deep as the reader allows: the compiler grows its stack instead of overflowing.
    let n = 9_000;
    let src = format!("{}x{}", "(+ 1 ".repeat(n), ")".repeat(n));
    let code = compile(&src, &["x"], &Registry::default()).expect("compiles");
    let mut b = Bindings::<f64>::new();
    b.lanes("x", vec![0.5, 1.5]);
    let e = Runner::new()
        .evaluate(&mut Vm::<f64>::default(), &code, &b, true)
        .expect("runs");
    assert_eq!(e.result, Output::Numbers(vec![9000.5, 9001.5]));
    let deep_if = format!("{}x{}", "(if (< x 2) ".repeat(500), " 0)".repeat(500));
    let code = compile(&deep_if, &["x"], &Registry::default()).expect("compiles");
    let e = Runner::new()
        .evaluate(&mut Vm::<f64>::default(), &code, &b, true)
        .expect("runs");
    assert_eq!(e.result, Output::Numbers(vec![0.5, 1.5]));
}

/// Deep nesting lists in linear space: indentation stops at 32 levels (20,000 nested `IF`s
/// once made a 3.9 GB listing, and reading binary bytecode lists it to locate errors).
#[test]
fn deeply_nested_code_lists_in_linear_space() {
    for depth in [1_000usize, 4_000] {
        let src = format!(
            "{}PUSH 2\nRET\n",
            "PUSH 1\nIF\n".repeat(depth) + &"END\n".repeat(depth)
        );
        let code = assemble(&src, &[], &Registry::default()).expect("assembles");
        let (text, spans) = ndvm_bytecode::asm::listing(&code.parts);
        assert_eq!(spans.len(), code.parts.instrs.len());
        assert!(
            text.len() < 80 * spans.len(),
            "{} bytes for {}",
            text.len(),
            spans.len()
        );
        let back = Code::from_binary(&code.to_binary(), &Registry::default()).expect("binary");
        assert_eq!(back.parts.instrs, code.parts.instrs);
    }
}
