//! The golden corpus: every `tests/golden/*.scm` file is its own test.
//!
//! A file's leading `;` comments state what it expects:
//!
//! ```text
//! ; bind: a=1 b=2          differentiable scalars
//! ; lanes: x=-1,1          differentiable per-lane inputs (B = list length)
//! ; limits: steps=N depth=N heap=N tape=N payload=N
//! ; precision: f64         (default f32)
//! ; expect: 3              the result: a number per lane (space-separated), or Scheme data
//!                          (a tensor as the text that builds it: `[1 2]`, `(mat [1 2] [3 4])`)
//! ; exact                  numbers must match to the last bit (as printed)
//! ; grad: a=0.5 x=-1,-1    per-lane gradients
//! ; error: type            the walk must fail with this kind …
//! ; error-at: 1:6          … at this line:column
//! ;; any text              a description
//! ```

use libtest_mimic::{Arguments, Failed, Trial};
use ndvm_engine::prelude::*;
use ndvm_engine::syntax::reader::parse_number;
use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/golden")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "scm"))
        .collect();
    files.sort();
    assert!(files.len() >= 50, "the golden corpus went missing");
    let trials = files
        .into_iter()
        .map(|p| {
            let name = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            Trial::test(name, move || check_file(&p))
        })
        .collect();
    libtest_mimic::run(&Arguments::from_args(), trials).exit();
}

#[derive(Default)]
struct Spec {
    bind: Vec<(String, f64)>,
    lanes: Vec<(String, Vec<f64>)>,
    limits: Limits,
    f64: bool,
    expect: Option<String>,
    exact: bool,
    grads: Vec<(String, Vec<f64>)>,
    error: Option<String>,
    error_at: Option<(usize, usize)>,
}

fn number(t: &str) -> Result<f64, Failed> {
    parse_number(t)
        .map(|l| l.f64)
        .ok_or_else(|| format!("`{t}` is not a number").into())
}

fn parse_spec(src: &str) -> Result<Spec, Failed> {
    let mut s = Spec::default();
    for line in src.lines().take_while(|l| l.starts_with(';')) {
        if line.starts_with(";;") {
            continue; // a description
        }
        let line = line.trim_start_matches(';').trim();
        let (key, rest) = line
            .split_once(':')
            .map_or((line, ""), |(k, r)| (k.trim(), r.trim()));
        let pairs = || rest.split_whitespace().filter_map(|kv| kv.split_once('='));
        match key {
            "bind" => {
                for (k, v) in pairs() {
                    s.bind.push((k.into(), number(v)?));
                }
            }
            "lanes" => {
                for (k, v) in pairs() {
                    s.lanes.push((
                        k.into(),
                        v.split(',').map(number).collect::<Result<_, _>>()?,
                    ));
                }
            }
            "grad" => {
                for (k, v) in pairs() {
                    s.grads.push((
                        k.into(),
                        v.split(',').map(number).collect::<Result<_, _>>()?,
                    ));
                }
            }
            "limits" => {
                for (k, v) in pairs() {
                    let n: u64 = v.parse().map_err(|_| format!("bad limit {v}"))?;
                    match k {
                        "steps" => s.limits.eval_steps = n,
                        "depth" => s.limits.recursion_depth = n,
                        "heap" => s.limits.heap_cells = n,
                        "tape" => s.limits.tape_nodes = n,
                        "payload" => s.limits.payload_bytes = n,
                        _ => return Err(format!("unknown limit {k}").into()),
                    }
                }
            }
            "precision" => s.f64 = rest == "f64",
            "expect" => s.expect = Some(rest.to_string()),
            "exact" => s.exact = true,
            "error" => s.error = Some(rest.to_string()),
            "error-at" => {
                let (l, c) = rest.split_once(':').ok_or("error-at: L:C")?;
                s.error_at = Some((
                    l.parse().map_err(|_| "line")?,
                    c.parse().map_err(|_| "column")?,
                ));
            }
            _ => return Err(format!("unknown header `{key}`").into()),
        }
    }
    if s.expect.is_none() && s.error.is_none() {
        return Err("a golden file must state `expect:` or `error:`".into());
    }
    Ok(s)
}

fn check_file(path: &Path) -> Result<(), Failed> {
    let src = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let spec = parse_spec(&src)?;
    if spec.f64 {
        check::<f64>(&src, &spec)
    } else {
        check::<f32>(&src, &spec)
    }
}

fn check<R: Real>(src: &str, spec: &Spec) -> Result<(), Failed> {
    let mut b = Bindings::<R>::new();
    for (k, v) in &spec.bind {
        b.scalar(k, R::from_f64(*v));
    }
    for (k, v) in &spec.lanes {
        b.lanes(k, v.iter().map(|&x| R::from_f64(x)).collect());
    }
    let outcome = Program::new(src, &b.names())
        .and_then(|p| evaluate(&mut Vm::<R>::new(spec.limits), &p, &b, true));
    match (&spec.error, outcome) {
        (Some(kind), Err(e)) => {
            if e.kind.name() != kind {
                return Err(format!("expected a {kind} error, got {}", e.render(src)).into());
            }
            if let Some(at) = spec.error_at {
                let got = e.span.map(|s| s.line_col(src));
                if got != Some(at) {
                    return Err(format!(
                        "expected the error at {at:?}, got {got:?}: {}",
                        e.render(src)
                    )
                    .into());
                }
            }
            Ok(())
        }
        (Some(kind), Ok(out)) => {
            Err(format!("expected a {kind} error, got {:?}", out.result).into())
        }
        (None, Err(e)) => Err(e.render(src).into()),
        (None, Ok(out)) => {
            let want = spec.expect.as_deref().unwrap_or("");
            match &out.result {
                Output::Numbers(ys) => {
                    let want: Vec<f64> = want
                        .split_whitespace()
                        .map(number)
                        .collect::<Result<_, _>>()?;
                    compare("result", ys, &want, spec.exact, 1e-6)?;
                }
                Output::Vector(rows) if rows.len() == 1 => {
                    let got = format!("[{}]", join(&rows[0]));
                    if got != want {
                        return Err(format!("expected {want}, got {got}").into());
                    }
                }
                Output::Matrix { cols, data, .. } if data.len() == 1 => {
                    let rows: Vec<String> = data[0]
                        .chunks(*cols)
                        .map(|r| format!("[{}]", join(r)))
                        .collect();
                    let got = format!("(mat {})", rows.join(" "));
                    if got != want {
                        return Err(format!("expected {want}, got {got}").into());
                    }
                }
                Output::Data(d) if d.len() == 1 => {
                    if d[0] != want {
                        return Err(format!("expected {want}, got {}", d[0]).into());
                    }
                }
                other => return Err(format!("unexpected result {other:?}").into()),
            }
            for (name, want) in &spec.grads {
                let got = out
                    .grads
                    .iter()
                    .find(|(n, _)| n == name)
                    .ok_or(format!("no gradient for {name}"))?;
                compare(&format!("d/d{name}"), &got.1, want, false, 2e-5)?;
            }
            Ok(())
        }
    }
}

/// Numbers as the CLI prints them, space-separated.
fn join<R: Real>(xs: &[R]) -> String {
    let items: Vec<String> = xs
        .iter()
        .map(|&x| ndvm_engine::eval::format_number(x))
        .collect();
    items.join(" ")
}

fn compare<R: Real>(
    what: &str,
    got: &[R],
    want: &[f64],
    exact: bool,
    tol: f64,
) -> Result<(), Failed> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} lanes, expected {}", got.len(), want.len()).into());
    }
    for (g, &w) in got.iter().zip(want) {
        let g = Real::to_f64(*g);
        let ok = if exact {
            g == w
        } else {
            ndvm_engine::check::close(g, w, tol, tol)
        };
        if !ok {
            return Err(format!("{what}: got {g}, expected {w}").into());
        }
    }
    Ok(())
}
