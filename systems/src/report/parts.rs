//! A fit cut into parts by candidate (`ndvm.ray.fit` runs one part per task) and its parts'
//! results merged back into what one process would have written, byte for byte.
//!
//! A part is [`crate::report::to_json`] without timing, run on the candidates whose index is
//! `k` modulo the part count. The merge keeps each candidate's results as the part wrote them
//! (a candidate's figures do not depend on which process fitted it), orders them by index —
//! a candidate reported twice (a retried task) is kept once — ranks them as
//! [`crate::report::FitReport::ranking`] does, keeps the first part's warnings (those of the
//! scene, the same in every part) and names the device: the parts' when they agree, else every
//! device they ran on.

use crate::device::DeviceUsed;
use crate::fit::{Fit, FitOptions};
use ndvm_components::scene::Scene;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::path::Path;

/// Fits part `k` of `n` of `scene`'s candidates (those whose index is `k` modulo `n`; the whole
/// population with `None`) and returns its results JSON without timing.
pub fn fit(
    scene: &Scene,
    base: &Path,
    part: Option<(usize, usize)>,
    options: &FitOptions,
) -> Result<String, String> {
    let (mut members, warnings) =
        crate::population::build(scene, base).map_err(|e| e.to_string())?;
    if let Some((k, n)) = part {
        members.retain(|m| m.candidate.index % n.max(1) == k);
    }
    let mut fit = Fit::with_members(scene, members, options).map_err(|e| e.to_string())?;
    let mut report = fit.run(|_| {});
    report.warnings = warnings;
    Ok(super::to_json(&report, None, 0))
}

/// One part's results: what the merge reads of them.
#[derive(Deserialize)]
struct Part {
    #[serde(default)]
    device: Option<DeviceUsed>,
    candidates: Vec<Box<RawValue>>,
    #[serde(default)]
    warnings: Vec<String>,
}

/// What a candidate is ordered and ranked by.
#[derive(Deserialize)]
struct Key {
    index: u64,
    /// `null` when it is not a number.
    loss: Option<f64>,
    status: String,
}

/// The device: one, or every one the parts ran on.
#[derive(Serialize)]
#[serde(untagged)]
enum Devices {
    One(DeviceUsed),
    Several(Vec<DeviceUsed>),
}

/// The merged results, in the order [`crate::report::to_json`] writes them.
#[derive(Serialize)]
struct Merged<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    device: Option<Devices>,
    candidates: Vec<&'a RawValue>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
    ranking: Vec<usize>,
}

/// Merges the parts' results JSON; an error names the part that is not a fit's results.
pub fn merge(parts: &[String]) -> Result<String, String> {
    let mut devices: Vec<DeviceUsed> = Vec::new();
    let mut candidates: Vec<(Key, Box<RawValue>)> = Vec::new();
    let mut warnings = Vec::new();
    for (i, text) in parts.iter().enumerate() {
        let part: Part = serde_json::from_str(text)
            .map_err(|e| format!("part {i} is not a fit's results: {e}"))?;
        for c in part.candidates {
            let key: Key = serde_json::from_str(c.get())
                .map_err(|e| format!("part {i}: a candidate without its results: {e}"))?;
            candidates.push((key, c));
        }
        if let Some(d) = part.device
            && !devices.contains(&d)
        {
            devices.push(d);
        }
        if i == 0 {
            warnings = part.warnings;
        }
    }
    candidates.sort_by_key(|(k, _)| k.index);
    candidates.dedup_by_key(|(k, _)| k.index);
    let loss = |k: &Key| k.loss.unwrap_or(f64::NAN);
    let mut ranking: Vec<usize> = (0..candidates.len()).collect();
    ranking.sort_by(|&a, &b| {
        let (ka, kb) = (&candidates[a].0, &candidates[b].0);
        super::rank(&ka.status, loss(ka), &kb.status, loss(kb)).then(a.cmp(&b))
    });
    let device = match devices.len() {
        0 => None,
        1 => devices.pop().map(Devices::One),
        _ => Some(Devices::Several(devices)),
    };
    let merged = Merged {
        device,
        candidates: candidates.iter().map(|(_, c)| c.as_ref()).collect(),
        warnings,
        ranking,
    };
    serde_json::to_string_pretty(&merged).map_err(|e| e.to_string())
}
