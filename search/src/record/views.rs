//! A record's views: what each place it goes to is shown of it. [`Record`] itself is what the
//! results (`search.json`) show; a log line ([`LogLine`]) names its program by number, the
//! program's own line ([`ProgramLine`]) holds its text once, and the wire form a shard sends
//! ([`WireRecord`]) keeps every number's bits.

use crate::record::Record;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A line of `programs.jsonl`.
#[derive(Debug, Serialize)]
pub struct ProgramLine<'a> {
    pub program: u64,
    pub skeleton: &'a str,
    pub src: &'a str,
}

/// A line of `calibrations.jsonl`: the record without its program's text, then the time.
#[derive(Debug, Serialize)]
pub struct LogLine<'a> {
    pub calibration: u64,
    pub candidate: u64,
    pub draw: u32,
    pub proposer: &'a str,
    pub name: &'a str,
    pub program: u64,
    pub params: &'a BTreeMap<String, f64>,
    pub train_loss: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_out_r2: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reconstruction_r2: Option<f64>,
    pub success: bool,
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<&'a str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub front: bool,
    pub timing: LogTiming,
}

/// When a calibration finished, in seconds since the search started.
#[derive(Debug, Serialize)]
pub struct LogTiming {
    pub elapsed_s: f64,
}

impl Record {
    /// This record's line of `calibrations.jsonl`.
    pub fn log_line(&self, elapsed_s: f64) -> LogLine<'_> {
        LogLine {
            calibration: self.calibration,
            candidate: self.candidate,
            draw: self.draw,
            proposer: &self.proposer,
            name: &self.name,
            program: self.program,
            params: &self.params,
            train_loss: self.train_loss,
            held_out_r2: self.held_out_r2,
            reconstruction_r2: self.reconstruction_r2,
            success: self.success,
            status: self.status,
            detail: self.detail.as_deref(),
            front: self.front,
            timing: LogTiming { elapsed_s },
        }
    }

    /// Its program's line of `programs.jsonl`.
    pub fn program_line(&self) -> ProgramLine<'_> {
        ProgramLine {
            program: self.program,
            skeleton: &self.skeleton,
            src: &self.src,
        }
    }
}

/// A [`Record`] as a shard sends it: numbers as their bits (a NaN loss, an infinite constant and
/// a missing R² all come back as they were), and the seconds into the shard's run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireRecord {
    pub calibration: u64,
    pub candidate: u64,
    pub draw: u32,
    pub proposer: String,
    pub name: String,
    pub skeleton: String,
    pub src: String,
    pub params: BTreeMap<String, u64>,
    pub train_loss: u64,
    pub held_out_r2: Option<u64>,
    #[serde(default)]
    pub reconstruction_r2: Option<u64>,
    pub success: bool,
    pub status: String,
    pub detail: Option<String>,
    pub elapsed_s: f64,
}

/// The statuses a record can have.
const STATUSES: [&str; 5] = ["done", "converged", "failed", "non-finite", "stopped"];

impl WireRecord {
    pub fn of(r: &Record, elapsed_s: f64) -> WireRecord {
        WireRecord {
            calibration: r.calibration,
            candidate: r.candidate,
            draw: r.draw,
            proposer: r.proposer.clone(),
            name: r.name.clone(),
            skeleton: r.skeleton.clone(),
            src: r.src.clone(),
            params: r
                .params
                .iter()
                .map(|(k, v)| (k.clone(), v.to_bits()))
                .collect(),
            train_loss: r.train_loss.to_bits(),
            held_out_r2: r.held_out_r2.map(f64::to_bits),
            reconstruction_r2: r.reconstruction_r2.map(f64::to_bits),
            success: r.success,
            status: r.status.to_string(),
            detail: r.detail.clone(),
            elapsed_s,
        }
    }

    /// The record back (an unknown status reads as `failed`).
    pub fn record(&self) -> Record {
        self.clone().into_record()
    }

    /// [`WireRecord::record`], its text moved rather than copied.
    pub fn into_record(self) -> Record {
        Record {
            calibration: self.calibration,
            candidate: self.candidate,
            draw: self.draw,
            status: STATUSES
                .into_iter()
                .find(|s| *s == self.status)
                .unwrap_or("failed"),
            proposer: self.proposer,
            name: self.name,
            skeleton: self.skeleton,
            program: 0,
            src: self.src,
            params: (self.params.into_iter())
                .map(|(k, v)| (k, f64::from_bits(v)))
                .collect(),
            train_loss: f64::from_bits(self.train_loss),
            held_out_r2: self.held_out_r2.map(f64::from_bits),
            reconstruction_r2: self.reconstruction_r2.map(f64::from_bits),
            success: self.success,
            detail: self.detail,
            // The merge's tally decides it again, in the merged order.
            front: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_crosses_the_wire_unchanged() {
        let r = Record {
            calibration: 3,
            candidate: 1,
            draw: 2,
            proposer: "evolve".into(),
            name: "n".into(),
            skeleton: "(* P x)".into(),
            program: 0,
            src: "(* a x)".into(),
            params: [("a".to_string(), f64::INFINITY), ("b".into(), -0.1)].into(),
            train_loss: f64::NAN,
            held_out_r2: None,
            reconstruction_r2: Some(0.25),
            success: false,
            status: "non-finite",
            detail: Some("why".into()),
            front: false,
        };
        let text = serde_json::to_string(&WireRecord::of(&r, 0.5)).expect("json");
        let back: WireRecord = serde_json::from_str(&text).expect("parses");
        let got = back.record();
        assert!(got.train_loss.is_nan());
        assert_eq!(got.params["a"], f64::INFINITY);
        assert_eq!(
            serde_json::to_string(&got.log_line(0.5)).expect("json"),
            serde_json::to_string(&r.log_line(0.5)).expect("json")
        );
        assert_eq!(back.elapsed_s, 0.5);
    }
}
