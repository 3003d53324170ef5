//! Timeline: how the best result and the successes grew with time — as a CSV and a plot
//! (`frontier.csv`, `frontier.svg`).
//!
//! A point is recorded whenever the best held-out R² (or training loss) improves or a new
//! successful skeleton appears, and at least every [`PERIOD_S`] seconds while calibrations go
//! on, so the file stays small however long the search runs. Times are wall-clock seconds since
//! the search started: the timeline is a timing output, not part of the byte-identical results.

use plotters::prelude::*;
use serde::Serialize;

/// Longest gap between recorded points, in seconds.
pub const PERIOD_S: f64 = 1.0;

/// One moment of the search.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Point {
    pub elapsed_s: f64,
    pub calibrations: u64,
    /// The best held-out R² (or training loss, when ranking by loss) so far.
    pub best: f64,
    pub successes: u64,
    pub distinct_successes: u64,
}

#[derive(Clone, Debug, Default)]
pub struct Timeline {
    pub points: Vec<Point>,
    /// Times at which a new successful skeleton appeared, with the best value then.
    pub new_successes: Vec<(f64, f64)>,
}

impl Timeline {
    /// Records `p` if something changed or the last point is older than [`PERIOD_S`].
    pub fn offer(&mut self, p: Point, new_success: bool) {
        if new_success {
            self.new_successes.push((p.elapsed_s, p.best));
        }
        let keep = match self.points.last() {
            None => true,
            Some(last) => {
                last.best.to_bits() != p.best.to_bits()
                    || last.distinct_successes != p.distinct_successes
                    || p.elapsed_s - last.elapsed_s >= PERIOD_S
            }
        };
        if keep {
            self.points.push(p);
        }
    }

    /// Ends the timeline with the final state (always recorded).
    pub fn close(&mut self, p: Point) {
        if self.points.last() != Some(&p) {
            self.points.push(p);
        }
    }

    /// `elapsed_s,calibrations,best,successes,distinct_successes`.
    pub fn csv(&self, best_name: &str) -> String {
        let mut out = format!("elapsed_s,calibrations,{best_name},successes,distinct_successes\n");
        for p in &self.points {
            out += &format!(
                "{:.6},{},{},{},{}\n",
                p.elapsed_s, p.calibrations, p.best, p.successes, p.distinct_successes
            );
        }
        out
    }

    /// The best value against time as an SVG line, with a marker at every new successful
    /// skeleton and the success threshold as a dashed line.
    pub fn svg(&self, title: &str, best_name: &str, threshold: Option<f64>) -> String {
        let mut svg = String::new();
        if let Err(e) = self.draw(&mut svg, title, best_name, threshold) {
            return format!("<svg xmlns=\"http://www.w3.org/2000/svg\"><text>{e}</text></svg>");
        }
        svg
    }

    fn draw(
        &self,
        svg: &mut String,
        title: &str,
        best_name: &str,
        threshold: Option<f64>,
    ) -> Result<(), Box<dyn std::error::Error + '_>> {
        let root = SVGBackend::with_string(svg, (800, 480)).into_drawing_area();
        root.fill(&WHITE)?;
        let finite: Vec<&Point> = self.points.iter().filter(|p| p.best.is_finite()).collect();
        let t_end = self.points.last().map_or(1.0, |p| p.elapsed_s).max(1e-3);
        let (mut lo, mut hi) = zoom(&finite, t_end);
        // The threshold is shown when it lies near the range that matters.
        let threshold = threshold.filter(|t| {
            let span = (hi - lo).max(f64::EPSILON);
            *t >= lo - span && *t <= hi + span
        });
        if let Some(t) = threshold {
            lo = lo.min(t);
            hi = hi.max(t);
        }
        if best_name.contains("R2") {
            hi = hi.min(1.0);
        }
        if !(lo.is_finite() && hi.is_finite()) || lo >= hi {
            let mid = if lo.is_finite() { lo } else { 0.0 };
            (lo, hi) = (mid - 0.5, mid + 0.5);
        }
        let pad = (hi - lo) * 0.05;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..t_end * 1.02, (lo - pad)..(hi + pad))?;
        // Enough decimals that neighbouring ticks differ.
        let decimals =
            (1.0 - ((hi - lo) / 5.0).max(1e-12).log10().floor()).clamp(1.0, 12.0) as usize;
        let tick = move |y: &f64| format!("{y:.decimals$}");
        chart
            .configure_mesh()
            .x_desc("elapsed seconds")
            .y_desc(best_name)
            .y_label_formatter(&tick)
            .draw()?;
        let clamp = |y: f64| y.clamp(lo - pad, hi + pad);
        // A step line: the best so far holds until the next improvement.
        let mut steps = Vec::new();
        for w in finite.windows(2) {
            steps.push((w[0].elapsed_s, clamp(w[0].best)));
            steps.push((w[1].elapsed_s, clamp(w[0].best)));
        }
        if let Some(p) = finite.last() {
            steps.push((p.elapsed_s, clamp(p.best)));
        }
        chart
            .draw_series(LineSeries::new(steps, BLUE.stroke_width(2)))?
            .label(format!(
                "{} so far",
                best_name.replace('_', " ").trim_start_matches("best ")
            ))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLUE.stroke_width(2)));
        if let Some(t) = threshold {
            chart
                .draw_series(DashedLineSeries::new(
                    [(0.0, t), (t_end * 1.02, t)],
                    6,
                    4,
                    RED.stroke_width(1),
                ))?
                .label("success threshold")
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], RED));
        }
        // Thousands of new structures would bury the line: smaller dots then.
        let radius = if self.new_successes.len() > 200 { 1 } else { 4 };
        chart
            .draw_series(
                self.new_successes
                    .iter()
                    .map(|&(t, y)| Circle::new((t, clamp(y)), radius, GREEN.filled())),
            )?
            .label("new successful structure")
            .legend(|(x, y)| Circle::new((x + 8, y), 4, GREEN.filled()));
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
        Ok(())
    }
}

/// The y range worth showing: the best values from 5% of the run on (the first moments'
/// values, often far below, are clamped to the bottom edge), or all of them when that leaves
/// fewer than two.
fn zoom(points: &[&Point], t_end: f64) -> (f64, f64) {
    let late: Vec<f64> = points
        .iter()
        .filter(|p| p.elapsed_s >= 0.05 * t_end)
        .map(|p| p.best)
        .collect();
    let values: Vec<f64> = if late.len() >= 2 {
        late
    } else {
        points.iter().map(|p| p.best).collect()
    };
    values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(t: f64, best: f64, s: u64) -> Point {
        Point {
            elapsed_s: t,
            calibrations: (t * 100.0) as u64,
            best,
            successes: s,
            distinct_successes: s,
        }
    }

    #[test]
    fn records_changes_and_a_point_per_period() {
        let mut f = Timeline::default();
        f.offer(point(0.0, 0.1, 0), false);
        f.offer(point(0.1, 0.1, 0), false);
        f.offer(point(0.2, 0.5, 0), false);
        f.offer(point(1.3, 0.5, 0), false);
        f.offer(point(1.4, 0.95, 1), true);
        f.close(point(2.0, 0.95, 1));
        let t: Vec<f64> = f.points.iter().map(|p| p.elapsed_s).collect();
        assert_eq!(t, [0.0, 0.2, 1.3, 1.4, 2.0]);
        let csv = f.csv("held_out_R2");
        assert!(
            csv.starts_with("elapsed_s,calibrations,held_out_R2,"),
            "{csv}"
        );
        assert_eq!(csv.lines().count(), 6);
        let svg = f.svg("test", "held_out_R2", Some(0.9));
        assert!(svg.starts_with("<svg") && svg.contains("<circle"), "{svg}");
        assert!(svg.contains("elapsed seconds"));
    }

    #[test]
    fn the_plot_zooms_on_the_late_values() {
        let mut f = Timeline::default();
        f.offer(point(0.0, -0.1, 0), false);
        f.offer(point(0.1, 0.5, 0), false);
        f.offer(point(1.0, 0.987, 0), false);
        f.offer(point(5.0, 0.990, 0), false);
        f.close(point(10.0, 0.994, 0));
        let finite: Vec<&Point> = f.points.iter().collect();
        assert_eq!(zoom(&finite, 10.0), (0.987, 0.994));
        // The tick labels are in the zoomed range, not 0…1.
        let svg = f.svg("test", "held_out_R2", Some(0.999));
        assert!(svg.contains("0.99"), "{svg}");
        assert!(!svg.contains(">0.5<"), "{svg}");
    }
}
