//! Result output: a readable table, or JSON for scripts.

use ndvm_engine::eval::format_number;
use ndvm_engine::{Evaluation, Output, Real};
use serde_json::{Value, json};

/// A number as JSON: finite values as numbers, others as `"+inf.0"`, `"-inf.0"`, `"+nan.0"`.
pub fn number<R: Real>(x: R) -> Value {
    let v = x.to_f64();
    if v.is_finite() {
        // Print the shortest decimal of the payload precision, not of its f64 widening.
        format!("{x}").parse::<f64>().map_or(json!(v), |d| json!(d))
    } else {
        json!(format_number(x))
    }
}

pub fn to_json<R: Real>(e: &Evaluation<R>, timing: Option<(f64, usize)>) -> Value {
    let result = match &e.result {
        Output::Numbers(xs) => Value::Array(xs.iter().map(|&x| number(x)).collect()),
        Output::Vector(data) => json!({
            "shape": [data.first().map_or(0, Vec::len)],
            "data": data.iter().map(|d| d.iter().map(|&x| number(x)).collect::<Vec<_>>()).collect::<Vec<_>>(),
        }),
        Output::Matrix { rows, cols, data } => json!({
            "shape": [rows, cols],
            "data": data.iter().map(|d| d.iter().map(|&x| number(x)).collect::<Vec<_>>()).collect::<Vec<_>>(),
        }),
        Output::Data(d) => json!({ "shape": "data", "data": d }),
    };
    let mut grads = serde_json::Map::new();
    for (name, g) in &e.grads {
        grads.insert(
            name.clone(),
            Value::Array(g.iter().map(|&x| number(x)).collect()),
        );
    }
    let mut out = json!({ "lanes": e.lanes, "result": result });
    if !e.grads.is_empty() {
        out["grads"] = Value::Object(grads);
    }
    if let Some((us, repeats)) = timing {
        out["timing"] = json!({ "per_eval_us": us, "repeats": repeats });
    }
    out
}

/// One row per lane: the result, then each gradient.
pub fn table<R: Real>(e: &Evaluation<R>) -> String {
    let mut header = vec!["lane".to_string(), "result".to_string()];
    header.extend(e.grads.iter().map(|(n, _)| format!("d/d{n}")));
    let mut rows = vec![header];
    for lane in 0..e.lanes {
        let mut row = vec![lane.to_string()];
        row.push(match &e.result {
            Output::Numbers(xs) => format_number(xs[lane]),
            Output::Vector(data) => {
                let items: Vec<String> = data[lane].iter().map(|&x| format_number(x)).collect();
                format!("[{}]", items.join(" "))
            }
            Output::Matrix { rows, cols, data } => {
                let d = &data[lane];
                let rows_text: Vec<String> = (0..*rows)
                    .map(|i| {
                        d[i * cols..(i + 1) * cols]
                            .iter()
                            .map(|&x| format_number(x))
                            .collect::<Vec<_>>()
                            .join(" ")
                    })
                    .collect();
                format!("[{}]", rows_text.join("; "))
            }
            Output::Data(d) => d[lane].clone(),
        });
        row.extend(e.grads.iter().map(|(_, g)| format_number(g[lane])));
        rows.push(row);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    rows.iter()
        .map(|r| {
            r.iter()
                .zip(&widths)
                .map(|(cell, w)| format!("{cell:<w$}"))
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Prints `text` and a newline on standard output. A closed pipe (`ndvm … | head`) ends the
/// output quietly; any other write error (a full disk) is an error, not a panic.
pub fn print(text: &str) -> Result<(), crate::Failure> {
    write_out(&[text.as_bytes(), b"\n"])
}

/// Writes `bytes` to standard output, as [`print`] does.
pub fn print_bytes(bytes: &[u8]) -> Result<(), crate::Failure> {
    write_out(&[bytes])
}

fn write_out(parts: &[&[u8]]) -> Result<(), crate::Failure> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let written = parts.iter().try_for_each(|p| out.write_all(p));
    match written.and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => {
            say!("error: cannot write the output: {e}");
            Err(crate::Failure::Program)
        }
    }
}
