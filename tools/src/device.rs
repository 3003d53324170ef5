//! `--device cpu|gpu|auto`: where replayed tapes run (docs/gpu.md).

use clap::ValueEnum;
use ndvm_components::scene::Device;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DeviceArg {
    /// The CPU replay only.
    Cpu,
    /// The GPU (an error when there is none; needs f32).
    Gpu,
    /// The GPU where its cost model says it wins, on a hardware GPU; else the CPU.
    Auto,
}

impl From<DeviceArg> for Device {
    fn from(d: DeviceArg) -> Device {
        match d {
            DeviceArg::Cpu => Device::Cpu,
            DeviceArg::Gpu => Device::Gpu,
            DeviceArg::Auto => Device::Auto,
        }
    }
}
