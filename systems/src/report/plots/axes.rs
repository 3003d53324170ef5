//! What every figure shares: axis ranges, tick labels, and a legend in a panel beside the plot
//! (so it never covers a point).

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

pub(super) type Drawn = Result<(), Box<dyn std::error::Error>>;

/// Width of the legend panel right of a plot.
pub(super) const LEGEND_WIDTH: u32 = 150;

/// `lo..hi` padded by 5% (and widened when empty or not finite).
pub(super) fn range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
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

/// A chart on `area` in the figures' style (margins, label areas, an optional caption), its
/// mesh drawn with the axes named `x` and `y` and ticks labelled by [`tick`].
pub(super) fn chart<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    caption: Option<&str>,
    (xr, yr): (std::ops::Range<f64>, std::ops::Range<f64>),
    (x, y): (&str, &str),
) -> Result<
    ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    Box<dyn std::error::Error>,
>
where
    DB::ErrorType: 'static,
{
    let (xspan, yspan) = (xr.end - xr.start, yr.end - yr.start);
    let mut builder = ChartBuilder::on(area);
    if let Some(c) = caption {
        builder.caption(c, ("sans-serif", 20));
    }
    let mut chart = builder
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(xr, yr)?;
    chart
        .configure_mesh()
        .x_desc(x)
        .y_desc(y)
        .x_label_formatter(&|v| tick(*v, xspan))
        .y_label_formatter(&|v| tick(*v, yspan))
        .draw()?;
    Ok(chart)
}

/// A tick label on an axis spanning `span`: as many decimals as ticks about a tenth of the span
/// apart need, scientific notation for very large or small values, and never `-0`.
pub(super) fn tick(v: f64, span: f64) -> String {
    let step = (span / 10.0).abs();
    // A tick at zero computed as ±1e-17 (and −0) is zero.
    let v = if v.abs() <= step * 1e-9 { 0.0 } else { v };
    let big = v.abs().max(span.abs());
    if !(step > 0.0 && step.is_finite()) {
        return format!("{}", v + 0.0);
    }
    let text = if !(1e-4..1e6).contains(&big) {
        format!("{v:.2e}")
    } else {
        let decimals = (-step.log10().floor()).max(0.0) as usize;
        format!("{v:.decimals$}")
    };
    // A tick at −0.000…01 prints as "-0.00": it is zero.
    match text.strip_prefix('-') {
        Some(rest) if rest.chars().all(|c| matches!(c, '0' | '.')) => rest.to_string(),
        _ => text,
    }
}

/// One legend entry's marker.
#[derive(Clone, Copy, Debug)]
pub(super) enum Mark {
    Line(RGBColor, u32),
    Band(RGBColor),
    Dot(RGBColor),
}

/// Draws `entries` top-down in `panel` (the strip right of a plot).
pub(super) fn legend<DB: DrawingBackend>(
    panel: &DrawingArea<DB, Shift>,
    entries: &[(Mark, String)],
) -> Drawn
where
    DB::ErrorType: 'static,
{
    let style = ("sans-serif", 13).into_font().color(&BLACK);
    for (i, (mark, label)) in entries.iter().enumerate() {
        let y = 60 + 22 * i as i32;
        match *mark {
            Mark::Line(c, w) => {
                panel.draw(&PathElement::new(vec![(8, y), (30, y)], c.stroke_width(w)))?;
            }
            Mark::Band(c) => {
                panel.draw(&Rectangle::new(
                    [(8, y - 6), (30, y + 6)],
                    c.mix(0.25).filled(),
                ))?;
            }
            Mark::Dot(c) => panel.draw(&Circle::new((19, y), 4, c.filled()))?,
        }
        panel.draw(&Text::new(
            label.clone(),
            (38, y),
            style.pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    Ok(())
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

    #[test]
    fn ticks_have_the_decimals_their_spacing_needs_and_no_negative_zero() {
        assert_eq!(tick(-1e-17, 0.8), "0.00");
        assert_eq!(tick(-0.0, 80.0), "0");
        assert_eq!(tick(0.25, 0.8), "0.25");
        assert_eq!(tick(12.0, 40.0), "12");
        assert_eq!(tick(2.5, 4.0), "2.5");
        assert_eq!(tick(-0.4, 0.8), "-0.40");
        assert_eq!(tick(3.0e7, 5.0e7), "3.00e7");
        assert_eq!(tick(0.999_95, 0.000_6), "0.99995");
        assert_eq!(tick(-1e-17, 5.0e7), "0.00e0");
        assert_eq!(tick(-2e-21, 1e-5), "0.00e0");
        assert_eq!(tick(-0.0, 0.0), "0");
    }
}
