//! Figures of a fit: what `ndvm fit --plots DIR` writes.
//!
//! For each plotted candidate (the best-ranked ones), with data: `candidate-N.svg` — the data
//! against the fitted curve (on a dense grid, with its 95% band), training and held-out points
//! marked apart, and the residuals below — and `candidate-N.csv` with the same numbers (every
//! input column and the target under the data's own column names, the prediction, the
//! residual, whether the row was held out) for plotting elsewhere. For every
//! plotted candidate: `losses-N.svg`, the loss of every restart per step (log scale). For the
//! population: `ranking.svg`, each candidate's loss and held-out R² against its program size.
//! `index.html` shows them all beside the ranked table. `N` is the candidate's index in the
//! population. Everything is a function of the report and the data, so reruns give the same
//! bytes.

mod axes;
mod data_fit;
mod losses;
mod ranking;

use crate::report::FitReport;
use crate::report::curve::Curve;
use axes::Drawn;
use ndvm_components::prelude::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

/// The files to write (name, contents) for the best `top` candidates of `report`: `data` is
/// each candidate's data set and `curves` its fitted curve on a dense grid (where it has one;
/// [`crate::fit::Fit::curves`]), by population index.
pub fn files(
    report: &FitReport,
    data: &BTreeMap<usize, Arc<Dataset>>,
    curves: &BTreeMap<usize, Curve>,
    top: usize,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let order = report.ranking();
    for &i in order.iter().take(top) {
        let c = &report.candidates[i];
        if let (Some(d), Some(_)) = (data.get(&c.index), &c.predictions) {
            let curve = curves.get(&c.index);
            let figure = svg(|s| data_fit::draw(s, c, d, curve));
            out.push((format!("candidate-{}.svg", c.index), figure));
            out.push((format!("candidate-{}.csv", c.index), data_fit::csv(c, d)));
        }
        if !c.losses.is_empty() {
            out.push((
                format!("losses-{}.svg", c.index),
                svg(|s| losses::draw(s, c)),
            ));
        }
    }
    out.push(("ranking.svg".into(), svg(|s| ranking::draw(s, report))));
    let names: Vec<&str> = out.iter().map(|(n, _)| n.as_str()).collect();
    let html = index(report, &order, top, &names);
    out.push(("index.html".into(), html));
    out
}

/// Renders into an SVG string; a drawing error becomes an SVG that says so.
fn svg(draw: impl FnOnce(&mut String) -> Drawn) -> String {
    let mut s = String::new();
    match draw(&mut s) {
        Ok(()) => s,
        Err(e) => format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\"><text y=\"20\">{}</text></svg>",
            escape(&e.to_string())
        ),
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// `index.html`: the ranked table and every figure.
fn index(report: &FitReport, order: &[usize], top: usize, files: &[&str]) -> String {
    let mut h = String::from(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ndvm fit</title>\n\
         <style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}\
         td,th{padding:2px 10px;text-align:left}tr:nth-child(even){background:#f4f4f4}\
         pre{background:#f4f4f4;padding:6px}</style></head><body>\n<h1>Fit results</h1>\n\
         <img src=\"ranking.svg\" alt=\"ranking\">\n<table>\n<tr><th>rank</th><th>candidate</th>\
         <th>status</th><th>loss</th><th>R² held out</th><th>k</th><th>AIC</th><th>ΔAIC</th>\
         <th>BIC</th><th>constants</th></tr>\n",
    );
    let lowest = report.lowest_criteria();
    for (rank, &i) in order.iter().enumerate() {
        let c = &report.candidates[i];
        let r2 = c.held_out_r2.map_or("-".into(), |r| format!("{r:.4}"));
        let criteria = match (&c.selection, lowest) {
            (Some(s), Some((min_aic, _))) => format!(
                "<td>{}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td>",
                s.params,
                s.aic,
                s.aic - min_aic,
                s.bic
            ),
            _ => "<td>-</td><td>-</td><td>-</td><td>-</td>".into(),
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.6e}</td><td>{r2}</td>{criteria}<td>{}</td></tr>",
            rank + 1,
            escape(&c.name),
            c.status,
            c.loss,
            escape(&c.constants().join(", "))
        );
    }
    h += "</table>\n";
    let note = report.selection_note();
    if !note.is_empty() {
        let _ = writeln!(h, "<p>{}</p>", escape(note.trim_end()));
    }
    for &i in order.iter().take(top) {
        let c = &report.candidates[i];
        let _ = writeln!(
            h,
            "<h2>{}</h2>\n<pre>{}</pre>",
            escape(&c.name),
            escape(&c.src)
        );
        let _ = writeln!(
            h,
            "<p>{} — {}</p>",
            c.status,
            escape(&c.constants().join(", "))
        );
        for name in [
            format!("candidate-{}.svg", c.index),
            format!("losses-{}.svg", c.index),
        ] {
            if files.contains(&name.as_str()) {
                let _ = writeln!(h, "<img src=\"{name}\" alt=\"{name}\">");
            }
        }
        let data = format!("candidate-{}.csv", c.index);
        if files.contains(&data.as_str()) {
            let _ = writeln!(h, "<p><a href=\"{data}\">{data}</a></p>");
        }
    }
    h += "</body></html>\n";
    h
}
