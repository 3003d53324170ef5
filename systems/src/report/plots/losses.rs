//! `losses-N.svg`: the loss of every restart per step, on a log scale where the losses are
//! positive; the best restart drawn thick. The legend (up to 16 restarts) sits beside the plot.

use super::axes::{Drawn, LEGEND_WIDTH, Mark, chart, legend, range};
use crate::report::CandidateResult;
use plotters::prelude::*;

pub(super) fn draw(s: &mut String, c: &CandidateResult) -> Drawn {
    let positive = c
        .losses
        .iter()
        .flatten()
        .all(|&l| l > 0.0 || !l.is_finite());
    let y = |l: f64| if positive { l.log10() } else { l };
    let root = SVGBackend::with_string(s, (800 + LEGEND_WIDTH, 440)).into_drawing_area();
    root.fill(&WHITE)?;
    let (plot, panel) = root.split_horizontally(800);
    let steps = c.losses.len().max(2) as f64;
    let yr = range(c.losses.iter().flatten().map(|&l| y(l)));
    let desc = if positive { "log10 loss" } else { "loss" };
    let caption = format!("{}: loss per step", c.name);
    let mut chart = chart(
        &plot,
        Some(&caption),
        (0.0..steps - 1.0, yr),
        ("step", desc),
    )?;
    let restarts = c.losses.first().map_or(0, Vec::len);
    let mut entries = Vec::new();
    for r in 0..restarts {
        let color = Palette99::pick(r).to_rgba();
        let color = RGBColor(color.0, color.1, color.2);
        let pts = c.losses.iter().enumerate().filter_map(|(k, ls)| {
            let v = y(*ls.get(r)?);
            v.is_finite().then_some((k as f64, v))
        });
        let width = if r == c.best_restart { 3 } else { 1 };
        chart.draw_series(LineSeries::new(pts, color.stroke_width(width)))?;
        let best = if r == c.best_restart { " (best)" } else { "" };
        entries.push((Mark::Line(color, width), format!("restart {r}{best}")));
    }
    if restarts <= 16 {
        legend(&panel, &entries)?;
    }
    root.present()?;
    Ok(())
}
