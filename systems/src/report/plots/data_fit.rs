//! `candidate-N.svg`: the data against the fitted curve (top) and the residuals (bottom).
//!
//! Axes are named by the data's own columns. With one input column the curve is drawn on a
//! dense grid with its 95% band ([`crate::report::curve`]); with several, the prediction is not
//! a function of the x axis alone and is marked at each data point instead. The legend sits in
//! a panel right of the plot.

use super::axes::{self, Drawn, LEGEND_WIDTH, Mark, chart, legend, range};
use crate::report::CandidateResult;
use crate::report::curve::Curve;
use ndvm_components::prelude::*;
use plotters::prelude::*;

/// The colour of the fitted curve and its band.
pub(super) const FIT: RGBColor = RED;
const TRAINING: RGBColor = BLUE;
const HELD_OUT: RGBColor = RGBColor(0, 160, 0);

/// The input drawn on the x axis (the first data column): its input name, the column's own
/// name, and its values.
fn x_axis(d: &Dataset) -> (String, String, Vec<f64>) {
    match d.inputs.iter().next() {
        Some((name, xs)) => (name.clone(), d.names.input(name).to_string(), xs.clone()),
        None => (
            "row".into(),
            "row".into(),
            (0..d.points()).map(|i| i as f64).collect(),
        ),
    }
}

/// The target's name on the y axis (`y` when the data set does not say).
fn y_name(d: &Dataset) -> &str {
    if d.names.target.is_empty() {
        "y"
    } else {
        &d.names.target
    }
}

pub(super) fn draw(
    s: &mut String,
    c: &CandidateResult,
    d: &Dataset,
    curve: Option<&Curve>,
) -> Drawn {
    let pred = &c.predictions.as_ref().ok_or("no predictions")?.values;
    let (_, xname, xs) = x_axis(d);
    let root = SVGBackend::with_string(s, (800 + LEGEND_WIDTH, 640)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(440);
    let (top, panel) = top.split_horizontally(800);
    let (bottom, _) = bottom.split_horizontally(800);
    let xr = range(xs.iter().copied());
    let band_edges = curve.into_iter().flat_map(|k| {
        let half = k.band.clone().unwrap_or_default();
        k.y.iter()
            .enumerate()
            .flat_map(move |(i, &y)| {
                let h = half.get(i).copied().unwrap_or(0.0);
                [y - h, y + h]
            })
            .collect::<Vec<_>>()
    });
    let yr = range(d.target.iter().chain(pred).copied().chain(band_edges));
    let caption = format!("{}: data and fit", c.name);
    let mut chart = chart(&top, Some(&caption), (xr.clone(), yr), (&xname, y_name(d)))?;
    let mut entries = Vec::new();
    match curve {
        Some(k) => {
            if let Some(half) = &k.band {
                let mut ring: Vec<(f64, f64)> =
                    k.x.iter()
                        .zip(&k.y)
                        .zip(half)
                        .map(|((&x, &y), &h)| (x, y + h))
                        .collect();
                ring.extend(
                    k.x.iter()
                        .zip(&k.y)
                        .zip(half)
                        .rev()
                        .map(|((&x, &y), &h)| (x, y - h)),
                );
                if ring.iter().all(|(x, y)| x.is_finite() && y.is_finite()) {
                    chart.draw_series([Polygon::new(ring, FIT.mix(0.2).filled())])?;
                    entries.push((Mark::Band(FIT), "95% band".to_string()));
                }
            }
            let line = k.x.iter().zip(&k.y).map(|(&x, &y)| (x, y));
            chart.draw_series(LineSeries::new(
                line.filter(|(x, y)| x.is_finite() && y.is_finite()),
                FIT.stroke_width(2),
            ))?;
            entries.insert(0, (Mark::Line(FIT, 2), "fit".to_string()));
        }
        None => {
            chart.draw_series(
                xs.iter()
                    .zip(pred)
                    .filter(|(x, y)| x.is_finite() && y.is_finite())
                    .map(|(&x, &y)| Cross::new((x, y), 4, FIT.stroke_width(2))),
            )?;
            entries.push((Mark::Line(FIT, 2), "fit at the data".to_string()));
        }
    }
    for (train, colour, label) in [(true, TRAINING, "training"), (false, HELD_OUT, "held out")] {
        let points: Vec<(f64, f64)> = (0..d.points())
            .filter(|&i| d.train[i] == train && xs[i].is_finite() && d.target[i].is_finite())
            .map(|i| (xs[i], d.target[i]))
            .collect();
        if points.is_empty() {
            continue;
        }
        chart.draw_series(
            points
                .into_iter()
                .map(|p| Circle::new(p, 3, colour.filled())),
        )?;
        entries.push((Mark::Dot(colour), label.to_string()));
    }
    legend(&panel, &entries)?;
    let resid: Vec<f64> = pred.iter().zip(&d.target).map(|(p, y)| y - p).collect();
    let rr = range(resid.iter().copied().chain([0.0]));
    let residual = format!("residual ({} − fit)", y_name(d));
    let mut chart = axes::chart(&bottom, None, (xr.clone(), rr), (&xname, &residual))?;
    chart.draw_series(LineSeries::new([(xr.start, 0.0), (xr.end, 0.0)], BLACK))?;
    chart.draw_series(
        (0..d.points())
            .filter(|&i| xs[i].is_finite() && resid[i].is_finite())
            .map(|i| {
                let color = if d.train[i] { TRAINING } else { HELD_OUT };
                Circle::new((xs[i], resid[i]), 3, color.filled())
            }),
    )?;
    root.present()?;
    Ok(())
}

/// `candidate-N.csv`: every row's inputs and target under the data's own column names, then the
/// prediction, the residual and whether the row was held out.
pub(super) fn csv(c: &CandidateResult, d: &Dataset) -> String {
    let pred = c.predictions.as_ref().map(|p| &p.values[..]).unwrap_or(&[]);
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<&str> = d.inputs.keys().map(|k| d.names.input(k)).collect();
    header.extend([y_name(d), "prediction", "residual", "held_out"]);
    let mut written = w.write_record(&header);
    for i in 0..d.points() {
        let p = pred.get(i).copied().unwrap_or(f64::NAN);
        let mut row: Vec<String> = d.inputs.values().map(|xs| xs[i].to_string()).collect();
        row.extend([
            d.target[i].to_string(),
            p.to_string(),
            (d.target[i] - p).to_string(),
            u8::from(!d.train[i]).to_string(),
        ]);
        written = written.and_then(|()| w.write_record(&row));
    }
    match (written, w.into_inner()) {
        (Ok(()), Ok(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
        _ => String::new(),
    }
}
