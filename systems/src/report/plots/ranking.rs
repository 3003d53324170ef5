//! `ranking.svg`: each finished candidate's loss (top) and held-out R² (bottom) against its
//! program size, the best in red.
//!
//! Points are named where a name fits: labels are placed best-ranked first, each right of its
//! point, else left, above or below — wherever it covers no point and no other label inside
//! the plot. A name that fits nowhere is left out (the table in `index.html` has them all).

use super::axes::{self, Drawn, chart, range};
use crate::report::{CandidateResult, FitReport};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Label font size, and the width of one character (an estimate: sans-serif at 12 px).
const FONT: i32 = 12;
const CHAR: f64 = 6.6;
/// Point radius.
const DOT: i32 = 4;
/// At most this many labels (beyond it, they are clutter).
const MAX_LABELS: usize = 60;

/// A pixel box: left, top, right, bottom.
pub(super) type Box4 = (i32, i32, i32, i32);

fn overlaps(a: Box4, b: Box4) -> bool {
    a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3
}

/// Where each label goes (its left edge and vertical centre), or `None` where it fits nowhere:
/// `points` are the dots' pixel centres, `labels` one per point in order of preference,
/// `area` the plot's box.
pub(super) fn place(
    points: &[(i32, i32)],
    labels: &[String],
    area: Box4,
) -> Vec<Option<(i32, i32)>> {
    let dot = |&(x, y): &(i32, i32)| (x - DOT, y - DOT, x + DOT, y + DOT);
    let mut taken: Vec<Box4> = points.iter().map(dot).collect();
    let mut out = Vec::with_capacity(points.len());
    for (i, (&(x, y), label)) in points.iter().zip(labels).enumerate() {
        if i >= MAX_LABELS {
            out.push(None);
            continue;
        }
        let w = (label.chars().count() as f64 * CHAR).ceil() as i32;
        let h = FONT;
        let gap = DOT + 3;
        let spots = [
            (x + gap, y),
            (x - gap - w, y),
            (x - w / 2, y - gap - h / 2),
            (x - w / 2, y + gap + h / 2),
        ];
        let fits = spots.into_iter().find(|&(left, mid)| {
            let b = (left, mid - h / 2, left + w, mid + h / 2);
            let inside = b.0 >= area.0 && b.1 >= area.1 && b.2 <= area.2 && b.3 <= area.3;
            inside && !taken.iter().any(|&t| overlaps(b, t))
        });
        if let Some((left, mid)) = fits {
            taken.push((left, mid - h / 2, left + w, mid + h / 2));
        }
        out.push(fits);
    }
    out
}

pub(super) fn draw(s: &mut String, report: &FitReport) -> Drawn {
    // Best-ranked first, so that they get their labels.
    let ok: Vec<&CandidateResult> = report
        .ranking()
        .into_iter()
        .map(|i| &report.candidates[i])
        .filter(|c| c.loss.is_finite() && c.loss > 0.0)
        .collect();
    let size = |c: &CandidateResult| crate::report::size(&c.src) as f64;
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
    let yr = range(ok.iter().map(|c| c.loss.log10()));
    let best = ok.first().map(|c| c.index);
    let colour = |c: &CandidateResult| if Some(c.index) == best { RED } else { BLUE };
    let size_axis = "program size (atoms)";
    let caption = "candidates: loss and held-out R² against program size";
    let mut chart = chart(
        &top,
        Some(caption),
        (xr.clone(), yr),
        (size_axis, "log10 loss"),
    )?;
    chart.draw_series(
        ok.iter()
            .map(|c| Circle::new((size(c), c.loss.log10()), DOT, colour(c).filled())),
    )?;
    let pixels: Vec<(i32, i32)> = ok
        .iter()
        .map(|c| chart.backend_coord(&(size(c), c.loss.log10())))
        .collect();
    let (xs, ys) = chart.plotting_area().get_pixel_range();
    let names: Vec<String> = ok.iter().map(|c| c.name.clone()).collect();
    let style = ("sans-serif", FONT).into_font().color(&BLACK);
    let anchor = Pos::new(HPos::Left, VPos::Center);
    for (name, spot) in
        names
            .iter()
            .zip(place(&pixels, &names, (xs.start, ys.start, xs.end, ys.end)))
    {
        if let Some(at) = spot {
            root.draw(&Text::new(name.clone(), at, style.pos(anchor)))?;
        }
    }
    if has_r2 {
        let r2: Vec<(f64, f64, RGBColor)> = ok
            .iter()
            .filter_map(|c| Some((size(c), c.held_out_r2?.max(-1.0), colour(c))))
            .collect();
        let rr = range(r2.iter().map(|p| p.1));
        let mut chart = axes::chart(&bottom, None, (xr, rr), (size_axis, "held-out R²"))?;
        chart.draw_series(
            r2.iter()
                .map(|&(x, y, c)| Circle::new((x, y), DOT, c.filled())),
        )?;
    }
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_cover_no_point_and_no_other_label() {
        // Three points in a row 20 px apart: the first label cannot go right (a point is in
        // the way), so it goes left; the others find room too; none overlaps anything.
        let points = [(100, 100), (120, 100), (140, 100), (400, 300)];
        let labels: Vec<String> = ["alpha", "beta", "gamma", "delta"].map(String::from).into();
        let area = (0, 0, 800, 400);
        let spots = place(&points, &labels, area);
        let mut boxes: Vec<Box4> = points
            .iter()
            .map(|&(x, y)| (x - 4, y - 4, x + 4, y + 4))
            .collect();
        for (label, spot) in labels.iter().zip(&spots) {
            let (left, mid) = spot.expect("every label fits somewhere here");
            let w = (label.chars().count() as f64 * CHAR).ceil() as i32;
            let b = (left, mid - FONT / 2, left + w, mid + FONT / 2);
            assert!(!boxes.iter().any(|&t| overlaps(b, t)), "{label} at {b:?}");
            boxes.push(b);
        }
        assert!(
            spots[0].expect("alpha").0 < 100,
            "alpha goes left of its point"
        );
        // A label that fits nowhere inside the area is left out.
        let cramped = place(&[(5, 5)], &["a long name".into()], (0, 0, 12, 12));
        assert_eq!(cramped, [None]);
    }
}
