//! Which device a fit's replays ran on, as the results JSON, the table footer and the search
//! summary name it.
//!
//! `kind` is `gpu` when replays ran on a GPU ([`DeviceUsed::ran`]): a device opened for the fit
//! (`device: Gpu`, or `Auto` finding a hardware GPU and a population wide enough) that no group
//! ended up on — the cost model kept them all on the CPU, or a custom primitive did — leaves
//! `cpu`. A software adapter (Mesa's lavapipe: a CPU
//! emulating a GPU) is named as such, and a device that failed mid-fit says why (the fit went on
//! on the CPU).

use serde::{Deserialize, Serialize};

/// The device a run used; read back as written (a shard's output carries it to the merge).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceUsed {
    /// `cpu` or `gpu`.
    pub kind: Kind,
    /// The GPU adapter, e.g. "NVIDIA H100 80GB HBM3 (Vulkan)".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter: Option<String>,
    /// The adapter is a CPU emulating a GPU: right, but slower than the CPU replay.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub software: bool,
    /// Why the device stopped being used mid-fit (the rest ran on the CPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<String>,
}

/// What ran the replays: `cpu` or `gpu` in the results.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Cpu,
    Gpu,
}

impl PartialEq<&str> for Kind {
    fn eq(&self, name: &&str) -> bool {
        matches!((self, *name), (Kind::Cpu, "cpu") | (Kind::Gpu, "gpu"))
    }
}

impl Default for DeviceUsed {
    fn default() -> Self {
        DeviceUsed::cpu()
    }
}

impl DeviceUsed {
    pub fn cpu() -> DeviceUsed {
        DeviceUsed {
            kind: Kind::Cpu,
            adapter: None,
            software: false,
            lost: None,
        }
    }

    pub fn gpu(adapter: String, software: bool) -> DeviceUsed {
        DeviceUsed {
            kind: Kind::Gpu,
            adapter: Some(adapter),
            software,
            lost: None,
        }
    }

    /// `CPU`, `GPU NVIDIA H100 80GB HBM3 (Vulkan)`, `GPU llvmpipe (…) (Vulkan), a CPU emulating a
    /// GPU`, with `, lost mid-fit: why` when it failed.
    pub fn describe(&self) -> String {
        let mut out = match &self.adapter {
            None => "CPU".to_string(),
            Some(a) => format!("GPU {a}"),
        };
        if self.software {
            out += ", a CPU emulating a GPU";
        }
        if let Some(why) = &self.lost {
            out += &format!(", lost mid-fit ({why}): the rest ran on the CPU");
        }
        out
    }

    /// What ran: this device if it did `runs` group runs (or failed trying), else the CPU.
    pub fn ran(&self, runs: u64) -> DeviceUsed {
        if self.kind == Kind::Gpu && runs == 0 && self.lost.is_none() {
            DeviceUsed::cpu()
        } else {
            self.clone()
        }
    }

    /// The warning a fit that asked for the GPU gets when the only adapter is a software one.
    pub fn software_warning(&self) -> Option<String> {
        let adapter = self.adapter.as_deref().filter(|_| self.software)?;
        Some(format!(
            "--device gpu: the adapter `{adapter}` is a CPU emulating a GPU (Mesa's lavapipe, no \
             GPU driver found): results are right but slower than `--device cpu`"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_device_is_named_for_people_and_for_scripts() {
        assert_eq!(DeviceUsed::cpu().describe(), "CPU");
        let json = serde_json::to_string(&DeviceUsed::cpu()).expect("json");
        assert_eq!(json, r#"{"kind":"cpu"}"#);
        let mut lvp = DeviceUsed::gpu("llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan)".into(), true);
        assert_eq!(
            lvp.describe(),
            "GPU llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan), a CPU emulating a GPU"
        );
        assert!(
            lvp.software_warning()
                .expect("warns")
                .contains("slower than `--device cpu`")
        );
        lvp.lost = Some("device lost".into());
        assert!(
            lvp.describe()
                .ends_with("lost mid-fit (device lost): the rest ran on the CPU")
        );
        let h100 = DeviceUsed::gpu("NVIDIA H100 (Vulkan)".into(), false);
        assert_eq!(
            h100.ran(0),
            DeviceUsed::cpu(),
            "opened, but nothing ran there"
        );
        assert_eq!(h100.ran(3), h100);
        assert_eq!(h100.software_warning(), None);
        assert_eq!(
            serde_json::to_string(&h100).expect("json"),
            r#"{"kind":"gpu","adapter":"NVIDIA H100 (Vulkan)"}"#
        );
    }

    #[test]
    fn a_device_reads_back_as_it_was_written() {
        let mut lost = DeviceUsed::gpu("llvmpipe (Vulkan)".into(), true);
        lost.lost = Some("device lost".into());
        for d in [
            DeviceUsed::cpu(),
            DeviceUsed::gpu("H100".into(), false),
            lost,
        ] {
            let json = serde_json::to_string(&d).expect("json");
            let back: DeviceUsed = serde_json::from_str(&json).expect("reads back");
            assert_eq!(back, d, "{json}");
        }
    }
}
