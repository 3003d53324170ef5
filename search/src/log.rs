//! The calibration log as written to disk: `calibrations.jsonl` (one line per calibration) and
//! `programs.jsonl` (one line per distinct program).
//!
//! A search calibrates the same program many times — every draw, and again on every pass of a
//! cycling stream — so a log line names its program by number instead of repeating its
//! source: a 10-second search of the bundled scalar task wrote 64 MB when every line carried
//! the source, and a stream of long programs 5 GB. Programs are numbered 0, 1, 2, … in the order
//! they first appear in the log, so the numbering is as deterministic as the log itself; a
//! program's line is written just before the first calibration that names it.
//!
//! Reading the two back together (pandas):
//!
//! ```text
//! import pandas as pd
//! log = pd.read_json("out/calibrations.jsonl", lines=True)
//! programs = pd.read_json("out/programs.jsonl", lines=True)
//! full = log.merge(programs, on="program")   # src and skeleton beside every calibration
//! ```

use crate::record::Record;
use ndvm_systems::folder::{Folder, LogFile};
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

/// The log's files, in the order [`LogWriter::new`] takes them.
pub const LOG_FILES: [&str; 2] = ["calibrations.jsonl", "programs.jsonl"];

/// Program numbers by source text. Keyed by a 128-bit hash of the source (two independent
/// 64-bit hashes), so memory stays at 24 bytes per distinct program whatever its length.
#[derive(Clone, Debug, Default)]
pub struct Programs {
    /// The keys are hashes already: a fast fixed hasher spreads them (no SipHash per record).
    ids: HashMap<u128, u64, foldhash::fast::FixedState>,
}

impl Programs {
    /// The number of the program `src`, given out in order of first appearance.
    pub fn id(&mut self, src: &str) -> u64 {
        self.id_of(fingerprint(src))
    }

    /// [`Programs::id`] of the program whose [`fingerprint`] is `print`.
    pub fn id_of(&mut self, print: u128) -> u64 {
        let next = self.ids.len() as u64;
        *self.ids.entry(print).or_insert(next)
    }

    /// Distinct programs seen.
    pub fn len(&self) -> u64 {
        self.ids.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

/// A program's identity in the log: two independent 64-bit hashes of its source.
pub fn fingerprint(src: &str) -> u128 {
    let half = |salt: u8| {
        let mut h = DefaultHasher::new();
        salt.hash(&mut h);
        src.hash(&mut h);
        h.finish()
    };
    (u128::from(half(0)) << 64) | u128::from(half(1))
}

/// Writes the log as it streams: a record's line of `calibrations.jsonl`, and before the first
/// record that names a program, that program's line of `programs.jsonl`.
///
/// Lines wait in memory and go out in batches ([`FLUSH_AT`] bytes of calibrations), whole, the
/// programs' before the calibrations': a calibration line is never on disk before the program
/// it names, whenever the process is killed. Write to unbuffered files (the batches are the
/// buffer). The fields hold what has gone out ([`LogWriter::flush`] sends the rest).
#[derive(Debug)]
pub struct LogWriter<W: std::io::Write> {
    pub calibrations: W,
    pub programs: W,
    /// Lines not sent yet: (calibrations, programs).
    waiting: (Vec<u8>, Vec<u8>),
    /// Programs written so far (they are numbered in order of first appearance).
    written: u64,
}

/// Bytes of calibration lines a [`LogWriter`] gathers before it writes them.
pub const FLUSH_AT: usize = 1 << 16;

impl<W: std::io::Write> LogWriter<W> {
    pub fn new(calibrations: W, programs: W) -> Self {
        LogWriter {
            calibrations,
            programs,
            waiting: (Vec::new(), Vec::new()),
            written: 0,
        }
    }

    pub fn write(&mut self, record: &Record, elapsed_s: f64) -> std::io::Result<()> {
        let first = record.program == self.written;
        self.written += u64::from(first);
        self.write_line(record, elapsed_s, first)
    }

    /// A record's line, and its program's before it when `first` (the record names the
    /// program first): for a log written in blocks that each know which records those are.
    pub fn write_line(
        &mut self,
        record: &Record,
        elapsed_s: f64,
        first: bool,
    ) -> std::io::Result<()> {
        use std::io::Write;
        let (calibrations, programs) = &mut self.waiting;
        if first {
            // Serializing these plain structs cannot fail.
            let _ = serde_json::to_writer(&mut *programs, &record.program_line());
            programs.push(b'\n');
        }
        let _ = serde_json::to_writer(&mut *calibrations, &record.log_line(elapsed_s));
        calibrations.write_all(b"\n")?;
        self.send_when_full()
    }

    /// Whole lines formatted elsewhere ([`LogWriter::into_lines`]): `programs` are the programs
    /// the `calibrations` name first.
    pub fn write_lines(&mut self, calibrations: &[u8], programs: &[u8]) -> std::io::Result<()> {
        self.waiting.0.extend_from_slice(calibrations);
        self.waiting.1.extend_from_slice(programs);
        self.send_when_full()
    }

    fn send_when_full(&mut self) -> std::io::Result<()> {
        if self.waiting.0.len() >= FLUSH_AT {
            self.send()?;
        }
        Ok(())
    }

    /// Sends the waiting lines: the programs' (flushed), then the calibrations', as one write
    /// each that a second Ctrl-C lets end ([`ndvm_systems::exit::writing`]).
    fn send(&mut self) -> std::io::Result<()> {
        let (calibrations, programs) = &mut self.waiting;
        let _writing = ndvm_systems::exit::writing();
        if !programs.is_empty() {
            self.programs.write_all(programs)?;
            self.programs.flush()?;
            programs.clear();
        }
        if !calibrations.is_empty() {
            self.calibrations.write_all(calibrations)?;
            self.calibrations.flush()?;
            calibrations.clear();
        }
        Ok(())
    }

    /// Sends every waiting line.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}

impl LogWriter<LogFile> {
    /// The log of a claimed folder ([`Folder::claim`] with [`LOG_FILES`]), written as the run
    /// goes; the run begins with its first line.
    pub fn in_folder(folder: &Arc<Folder>) -> Self {
        LogWriter::new(folder.log_file(0), folder.log_file(1))
    }
}

impl LogWriter<Vec<u8>> {
    /// The lines written to memory, as (calibrations, programs): a log formatted apart and
    /// handed to [`LogWriter::write_lines`].
    pub fn into_lines(mut self) -> (Vec<u8>, Vec<u8>) {
        // Writing to memory cannot fail.
        let _ = self.send();
        (self.calibrations, self.programs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calibration_never_goes_out_before_its_program() {
        use std::sync::{Arc, Mutex};
        /// The program lines out so far, shared with the calibrations' writer.
        type Out = Arc<Mutex<Vec<u8>>>;
        struct ProgramFile(Out);
        impl std::io::Write for ProgramFile {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().expect("not poisoned").extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        /// Checks, at each write, that every program its lines name is out already.
        struct Calibrations(Out);
        impl std::io::Write for Calibrations {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                let out = (self.0.lock().expect("not poisoned"))
                    .iter()
                    .filter(|&&c| c == b'\n')
                    .count();
                for line in std::str::from_utf8(b).expect("UTF-8").lines() {
                    let v: serde_json::Value = serde_json::from_str(line).expect("whole lines");
                    let named = v["program"].as_u64().expect("a number") as usize;
                    assert!(named < out, "calibration names program {named}, {out} out");
                }
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let out: Out = Arc::default();
        let mut log = LogWriter::new(
            Box::new(Calibrations(out.clone())) as Box<dyn std::io::Write>,
            Box::new(ProgramFile(out.clone())),
        );
        let mut numbers = Programs::default();
        for i in 0..5000u64 {
            let src = format!("(* a {})", i % 700);
            let mut r = Record::sample(i, &src, "(* P 1)", 1.0);
            r.program = numbers.id(&src);
            log.write(&r, 0.0).expect("written");
            // Nothing goes out line by line.
            if i == 0 {
                assert!(out.lock().expect("not poisoned").is_empty());
            }
        }
        log.flush().expect("flushed");
        assert_eq!(
            out.lock()
                .expect("not poisoned")
                .iter()
                .filter(|&&c| c == b'\n')
                .count(),
            700
        );
    }

    #[test]
    fn programs_are_numbered_by_first_appearance() {
        let mut p = Programs::default();
        let long = "(+ a x)".repeat(10_000);
        assert_eq!(
            ["(* a x)", "(+ a x)", "(* a x)", long.as_str(), "(+ a x)"].map(|s| p.id(s)),
            [0, 1, 0, 2, 1]
        );
        assert_eq!(p.len(), 3);
    }
}
