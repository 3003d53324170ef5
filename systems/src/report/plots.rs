//! Figures of a fit: what `ndvm fit --plots DIR` writes.
//!
//! For each plotted candidate (the best-ranked ones), with data: `candidate-N.svg` — the data
//! against the fitted curve, training and held-out points marked apart, and the residuals below
//! — and `candidate-N.csv` with the same numbers (every input column, the target, the
//! prediction, the residual, whether the row was held out) for plotting elsewhere. For every
//! plotted candidate: `losses-N.svg`, the loss of every restart per step (log scale). For the
//! population: `ranking.svg`, each candidate's loss and held-out R² against its program size.
//! `index.html` shows them all beside the ranked table. `N` is the candidate's index in the
//! population. Everything is a function of the report and the data, so reruns give the same
//! bytes.

use crate::report::{CandidateResult, FitReport};
use ndvm_components::prelude::*;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

type Drawn = Result<(), Box<dyn std::error::Error>>;

/// The files to write (name, contents) for the best `top` candidates of `report`.
pub fn files(
    report: &FitReport,
    data: &BTreeMap<usize, Arc<Dataset>>,
    top: usize,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let order = report.ranking();
    for &i in order.iter().take(top) {
        let c = &report.candidates[i];
        if let (Some(d), Some(_)) = (data.get(&c.index), &c.predictions) {
            out.push((format!("candidate-{}.svg", c.index), svg(|s| fit(s, c, d))));
            out.push((format!("candidate-{}.csv", c.index), csv(c, d)));
        }
        if !c.losses.is_empty() {
            out.push((format!("losses-{}.svg", c.index), svg(|s| losses(s, c))));
        }
    }
    out.push(("ranking.svg".into(), svg(|s| ranking(s, report))));
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

/// `lo..hi` padded by 5% (and widened when empty or not finite).
fn range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    if !(lo.is_finite() && hi.is_finite()) {
        return 0.0..1.0;
    }
    let pad = if hi > lo {
        (hi - lo) * 0.05
    } else {
        lo.abs().max(1.0) * 0.05
    };
    let (a, b) = (lo - pad, hi + pad);
    // Near ±f64::MAX the padding overflows, and a plotting range must be finite.
    if a.is_finite() && b.is_finite() && a < b {
        a..b
    } else if lo < hi && (hi - lo).is_finite() {
        lo..hi
    } else {
        -1.0..1.0
    }
}

/// The input drawn on the x axis: the first data column.
fn x_axis(d: &Dataset) -> (String, Vec<f64>) {
    match d.inputs.iter().next() {
        Some((name, xs)) => (name.clone(), xs.clone()),
        None => ("row".into(), (0..d.points()).map(|i| i as f64).collect()),
    }
}

/// Data against the fitted curve (top) and the residuals (bottom).
fn fit(s: &mut String, c: &CandidateResult, d: &Dataset) -> Drawn {
    let pred = &c.predictions.as_ref().ok_or("no predictions")?.values;
    let (xname, xs) = x_axis(d);
    let root = SVGBackend::with_string(s, (800, 640)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(440);
    let xr = range(xs.iter().copied());
    let yr = range(d.target.iter().chain(pred).copied());
    let mut chart = ChartBuilder::on(&top)
        .caption(format!("{}: data and fit", c.name), ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(xr.clone(), yr)?;
    chart
        .configure_mesh()
        .x_desc(&xname)
        .y_desc("target")
        .draw()?;
    // The fitted curve through the predictions, in order of x.
    let mut line: Vec<(f64, f64)> = xs.iter().copied().zip(pred.iter().copied()).collect();
    line.sort_by(|a, b| a.0.total_cmp(&b.0));
    let line = line
        .into_iter()
        .filter(|(x, y)| x.is_finite() && y.is_finite());
    chart
        .draw_series(LineSeries::new(line, RED.stroke_width(2)))?
        .label("fit")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], RED.stroke_width(2)));
    let point = |train: bool| {
        let (xs, d) = (&xs, &d);
        move |i: usize| -> Option<(f64, f64)> {
            (d.train[i] == train && xs[i].is_finite() && d.target[i].is_finite())
                .then(|| (xs[i], d.target[i]))
        }
    };
    for (train, colour, label) in [(true, BLUE, "training"), (false, GREEN, "held out")] {
        chart
            .draw_series(
                (0..d.points())
                    .filter_map(point(train))
                    .map(move |p| Circle::new(p, 3, colour.filled())),
            )?
            .label(label)
            .legend(move |(x, y)| Circle::new((x + 8, y), 3, colour.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    let resid: Vec<f64> = pred.iter().zip(&d.target).map(|(p, y)| y - p).collect();
    let rr = range(resid.iter().copied().chain([0.0]));
    let mut chart = ChartBuilder::on(&bottom)
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(xr.clone(), rr)?;
    chart
        .configure_mesh()
        .x_desc(&xname)
        .y_desc("residual")
        .draw()?;
    chart.draw_series(LineSeries::new([(xr.start, 0.0), (xr.end, 0.0)], BLACK))?;
    chart.draw_series(
        (0..d.points())
            .filter(|&i| xs[i].is_finite() && resid[i].is_finite())
            .map(|i| {
                let color = if d.train[i] { BLUE } else { GREEN };
                Circle::new((xs[i], resid[i]), 3, color.filled())
            }),
    )?;
    root.present()?;
    Ok(())
}

/// The loss of every restart per step, on a log scale where the losses are positive.
fn losses(s: &mut String, c: &CandidateResult) -> Drawn {
    let positive = c
        .losses
        .iter()
        .flatten()
        .all(|&l| l > 0.0 || !l.is_finite());
    let y = |l: f64| if positive { l.log10() } else { l };
    let root = SVGBackend::with_string(s, (800, 440)).into_drawing_area();
    root.fill(&WHITE)?;
    let steps = c.losses.len().max(2) as f64;
    let yr = range(c.losses.iter().flatten().map(|&l| y(l)));
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{}: loss per step", c.name), ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..steps - 1.0, yr)?;
    let desc = if positive { "log10 loss" } else { "loss" };
    chart.configure_mesh().x_desc("step").y_desc(desc).draw()?;
    let restarts = c.losses.first().map_or(0, Vec::len);
    for r in 0..restarts {
        let color = Palette99::pick(r);
        let pts = c.losses.iter().enumerate().filter_map(|(k, ls)| {
            let v = y(*ls.get(r)?);
            v.is_finite().then_some((k as f64, v))
        });
        let width = if r == c.best_restart { 3 } else { 1 };
        chart
            .draw_series(LineSeries::new(pts, color.stroke_width(width)))?
            .label(format!(
                "restart {r}{}",
                if r == c.best_restart { " (best)" } else { "" }
            ))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
            });
    }
    if restarts <= 16 {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
    }
    root.present()?;
    Ok(())
}

/// Each finished candidate's loss (top) and held-out R² (bottom) against its program size.
fn ranking(s: &mut String, report: &FitReport) -> Drawn {
    let ok: Vec<&CandidateResult> = report
        .candidates
        .iter()
        .filter(|c| c.loss.is_finite() && c.loss > 0.0)
        .collect();
    let size = |c: &CandidateResult| crate::search::record::size(&c.src) as f64;
    let has_r2 = ok.iter().any(|c| c.held_out_r2.is_some());
    let root =
        SVGBackend::with_string(s, (800, if has_r2 { 640 } else { 400 })).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = if has_r2 {
        root.split_vertically(340)
    } else {
        (root.clone(), root.clone())
    };
    let xr = range(ok.iter().map(|c| size(c)));
    let best = report.ranking().first().copied();
    let is_best = |c: &CandidateResult| best.is_some_and(|b| report.candidates[b].index == c.index);
    let mut chart = ChartBuilder::on(&top)
        .caption(
            "candidates: loss and held-out R² against program size",
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(xr.clone(), range(ok.iter().map(|c| c.loss.log10())))?;
    chart
        .configure_mesh()
        .x_desc("program size (atoms)")
        .y_desc("log10 loss")
        .draw()?;
    chart.draw_series(ok.iter().map(|c| {
        let color = if is_best(c) { RED } else { BLUE };
        Circle::new((size(c), c.loss.log10()), 4, color.filled())
    }))?;
    if ok.len() <= 30 {
        // Few enough to name each point.
        chart.draw_series(ok.iter().map(|c| {
            Text::new(
                format!(" {}", c.name),
                (size(c), c.loss.log10()),
                ("sans-serif", 12),
            )
        }))?;
    }
    if has_r2 {
        let r2: Vec<(f64, f64, bool)> = ok
            .iter()
            .filter_map(|c| Some((size(c), c.held_out_r2?.max(-1.0), is_best(c))))
            .collect();
        let mut chart = ChartBuilder::on(&bottom)
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(64)
            .build_cartesian_2d(xr, range(r2.iter().map(|p| p.1)))?;
        chart
            .configure_mesh()
            .x_desc("program size (atoms)")
            .y_desc("held-out R²")
            .draw()?;
        chart.draw_series(
            r2.iter()
                .map(|&(x, y, b)| Circle::new((x, y), 4, if b { RED } else { BLUE }.filled())),
        )?;
    }
    root.present()?;
    Ok(())
}

/// `candidate-N.csv`: the inputs, target, prediction, residual and split of every row.
fn csv(c: &CandidateResult, d: &Dataset) -> String {
    let pred = c.predictions.as_ref().map(|p| &p.values[..]).unwrap_or(&[]);
    let mut out: String = d.inputs.keys().map(|k| format!("{k},")).collect();
    out += "target,prediction,residual,held_out\n";
    for i in 0..d.points() {
        for xs in d.inputs.values() {
            let _ = write!(out, "{},", xs[i]);
        }
        let p = pred.get(i).copied().unwrap_or(f64::NAN);
        let _ = writeln!(
            out,
            "{},{p},{},{}",
            d.target[i],
            d.target[i] - p,
            u8::from(!d.train[i])
        );
    }
    out
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
         <th>status</th><th>loss</th><th>R² held out</th><th>constants</th></tr>\n",
    );
    for (rank, &i) in order.iter().enumerate() {
        let c = &report.candidates[i];
        let r2 = c.held_out_r2.map_or("-".into(), |r| format!("{r:.4}"));
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.6e}</td><td>{r2}</td><td>{}</td></tr>",
            rank + 1,
            escape(&c.name),
            c.status,
            c.loss,
            escape(&c.constants().join(", "))
        );
    }
    h += "</table>\n";
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_ranges_are_finite_whatever_the_values() {
        assert_eq!(range([1.0, 3.0].into_iter()), 0.9..3.1);
        assert_eq!(range([2.0].into_iter()), 1.9..2.1);
        assert_eq!(range([f64::NAN].into_iter()), 0.0..1.0);
        let huge = range([-1.7e308, 1.7e308].into_iter());
        assert!(huge.start.is_finite() && huge.end.is_finite() && huge.start < huge.end);
        let top = range([1.7e308, 1.79e308].into_iter());
        assert!(top.start.is_finite() && top.end.is_finite() && top.start < top.end);
    }
}
