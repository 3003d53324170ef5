//! The run flags `ndvm fit`, `ndvm profile` and `ndvm search` share (flattened into each), and
//! `--device cpu|gpu|auto` and `--precision f32|f64` parsed straight into the scene's
//! [`Device`] and [`Precision`] (docs/gpu.md).

use clap::Args;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use ndvm_components::scene::{Device, Precision};

/// Worker threads, replay, steps per pass and the device: what the caller asks for over the
/// scene's run settings (resolved by `ndvm_systems::settings`).
#[derive(Args, Debug, Clone, Copy)]
pub struct RunFlags {
    /// Worker threads (default: the scene's `threads`, else one per core; never more than the
    /// cores available). Results do not depend on it (a search's, under a calibration budget).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Walk every candidate on every step instead of replaying its recorded tape (the
    /// reference behaviour: the same results, more time).
    #[arg(long)]
    pub walk_every_step: bool,
    /// Steps each candidate takes per parallel pass (default 16). A fit's results are the same
    /// for every value (1 runs every stage of every step as its own system: docs/profiling.md);
    /// a search refills its window between passes, so its results depend on it, never on
    /// `--threads`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub steps_per_pass: Option<u32>,
    /// Where replayed tapes run (default: the scene's `device`, else auto; docs/gpu.md).
    #[arg(long, value_name = "cpu|gpu|auto", value_parser = device())]
    pub device: Option<Device>,
}

/// Parses `cpu|gpu|auto` into a [`Device`], each value documented in `--help`.
pub fn device() -> impl TypedValueParser<Value = Device> {
    PossibleValuesParser::new([
        PossibleValue::new("cpu").help("The CPU replay only"),
        PossibleValue::new("gpu").help("The GPU (an error when there is none; needs f32)"),
        PossibleValue::new("auto")
            .help("The GPU where its cost model says it wins, on a hardware GPU; else the CPU"),
    ])
    .map(|s| match s.as_str() {
        "cpu" => Device::Cpu,
        "gpu" => Device::Gpu,
        _ => Device::Auto,
    })
}

/// Parses `f32|f64` into a [`Precision`].
pub fn precision() -> impl TypedValueParser<Value = Precision> {
    PossibleValuesParser::new(["f32", "f64"]).map(|s| match s.as_str() {
        "f32" => Precision::F32,
        _ => Precision::F64,
    })
}
