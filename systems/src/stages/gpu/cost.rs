//! `auto`'s cost model: whether the device or the CPU replays a group faster.
//!
//! The device's estimate is a fixed cost per run plus the tape's work per lane
//! ([`ndvm_gpu::tape_work`], multiply-adds, judged on the one walked lane's tape) times the
//! lanes at the device's rate; the CPU's is the same work at one core's rate times the fit's
//! cores. The default is fitted to the Kalman sweep measured on an H200 beside its host's 16
//! Xeon cores (docs/gpu.md, "Measured"); a machine measured with `benches/device/gpu.sh` can
//! bring its own ([`crate::fit::FitOptions::cost_model`]).

/// The rates and thresholds `auto` decides with (docs/gpu.md).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CostModel {
    /// Tape work one CPU core replays and differentiates per second: 11–22 × 10⁹ on the
    /// sweep's 16 cores, the faster end taken so the CPU is never underestimated.
    pub cpu_work_per_core_s: f64,
    /// Tape work the device runs per second with the faster entry for the tape, on the sweep's
    /// slowest row (the H200: 42 × 10⁹ at D = 8 on the lane entry; 46–68 × 10⁹ cooperating at
    /// D = 16 and 32, over 150 × 10⁹ at D = 2).
    pub gpu_work_s: f64,
    /// A device run's fixed cost, seconds: the rows' upload, the dispatches, the read-back (a
    /// 65,536-lane run of the D = 2 filter took 7.1 ms on the H200, work included).
    pub gpu_run_s: f64,
    /// Lanes a group needs for the device's rate to hold: fewer leave it idle, and a lane's
    /// steps run one after another at a GPU core's speed, far below a CPU core's.
    pub min_lanes: usize,
    /// Whether a software adapter (a CPU emulating a GPU) may be chosen: never, by default.
    /// Tests turn it on to exercise `auto` on the only adapter CI has.
    pub software: bool,
}

impl Default for CostModel {
    fn default() -> Self {
        CostModel {
            cpu_work_per_core_s: 1.4e9,
            gpu_work_s: 4.0e10,
            gpu_run_s: 0.002,
            min_lanes: 256,
            software: false,
        }
    }
}

impl CostModel {
    /// Whether a group of `lanes` lanes whose tape has `work` multiply-adds per lane goes to
    /// the device: the device's estimate beats the CPU's on `cores` cores.
    pub fn wins(&self, lanes: usize, work: u64, software: bool, cores: usize) -> bool {
        let total = lanes as f64 * work as f64;
        let cpu_s = total / (self.cpu_work_per_core_s * cores.max(1) as f64);
        let gpu_s = self.gpu_run_s + total / self.gpu_work_s;
        (self.software || !software) && self.could_win(lanes) && cpu_s > gpu_s
    }

    /// Whether a candidate of `lanes` lanes could go to the device at all, whatever its tape.
    pub fn could_win(&self, lanes: usize) -> bool {
        lanes >= self.min_lanes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sweep's rows as measured on an H200 beside its host's 16 cores (docs/gpu.md,
    /// "Measured"): D, lanes, the tape's work per lane (`ndvm_gpu::tape_work` of the bench's
    /// filter), the CPU's and the faster device entry's milliseconds.
    const ROWS: [(usize, usize, u64, f64, f64); 7] = [
        (2, 1_024, 17_124, 0.96, 20.6),
        (2, 65_536, 17_124, 50.1, 7.1),
        (8, 16_384, 500_964, 733.0, 197.0),
        (8, 65_536, 500_964, 5_367.0, 789.0),
        (16, 4_096, 3_619_044, 1_010.0, 321.0),
        (32, 1_024, 27_549_924, 1_290.0, 414.0),
        (32, 4_096, 27_549_924, 7_290.0, 1_650.0),
    ];

    #[test]
    fn auto_picks_the_faster_side_on_every_measured_row() {
        let model = CostModel::default();
        for (d, lanes, work, cpu_ms, gpu_ms) in ROWS {
            assert_eq!(
                model.wins(lanes, work, false, 16),
                gpu_ms < cpu_ms,
                "D = {d}, {lanes} lanes"
            );
            assert!(
                !model.wins(lanes, work, true, 16),
                "never on a software adapter"
            );
        }
    }

    #[test]
    fn more_cores_raise_the_bar() {
        let model = CostModel::default();
        // The D = 2 filter on 65,536 lanes: the device's fixed cost is won back against 16
        // cores, not against 256.
        assert!(model.wins(65_536, 17_124, false, 16));
        assert!(!model.wins(65_536, 17_124, false, 256));
        // Too few lanes never go, however long the tape: one lane of the D = 32 filter.
        assert!(!model.wins(1, 27_549_924, false, 1));
        assert!(model.wins(model.min_lanes, 27_549_924, false, 1));
        assert!(!model.could_win(model.min_lanes - 1));
    }

    #[test]
    fn a_software_adapter_only_when_the_model_allows_it() {
        let model = CostModel {
            software: true,
            ..CostModel::default()
        };
        assert!(model.wins(4_096, 27_549_924, true, 16));
        assert!(
            !model.wins(4_096, 17_124, true, 16),
            "still only when it wins"
        );
    }
}
