//! A shard's calibrations kept on disk until the merge, so that a sharded search's memory stays
//! flat however long it runs ([`super::local`]).
//!
//! The merge needs every record of shard 0 before any of shard 1's, while all of a round's shards
//! run at once: all but one shard's records must wait. Held in memory they cost about 2 KB each
//! (254 MB for 120,000 calibrations of the scalar task); here each is appended, as its shard
//! finishes it, to an unnamed temporary file (in `TMPDIR`, removed when the search ends) in a
//! compact binary form (postcard), and read back in order, a chunk at a time, by the merge.
//! The disk used is about a third of the log's size.
//!
//! A record crosses the file exactly as it crosses the wire to a cluster: a [`WireRecord`]
//! (numbers as their bits), with its program's [`fingerprint`] taken while the shard still runs.

use super::log::fingerprint;
use super::record::Record;
use super::shard::WireRecord;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, Write};

/// Where a running shard's records go ([`Spill::push`]), then read back ([`Spill::finish`]).
#[derive(Debug)]
pub struct Spill {
    file: BufWriter<File>,
    /// One record's bytes, reused.
    scratch: Vec<u8>,
    count: u64,
    /// The first write that failed: the rest are skipped and [`Spill::finish`] reports it.
    error: Option<std::io::Error>,
}

/// A finished shard's records on disk, read back in order.
#[derive(Debug)]
pub struct Spilled {
    file: BufReader<File>,
    left: u64,
}

/// Why a spill could not be written or read back.
fn failed(what: &str, e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(format!(
        "cannot {what} a shard's records in a temporary file (in {}): {e}",
        std::env::temp_dir().display()
    ))
}

impl Spill {
    /// An empty spill in a new temporary file.
    pub fn new() -> std::io::Result<Spill> {
        let file = tempfile::tempfile().map_err(|e| failed("keep", e))?;
        Ok(Spill {
            file: BufWriter::with_capacity(1 << 16, file),
            scratch: Vec::new(),
            count: 0,
            error: None,
        })
    }

    /// Appends a record that finished `elapsed_s` into its shard's run.
    pub fn push(&mut self, r: &Record, elapsed_s: f64) {
        if self.error.is_some() {
            return;
        }
        self.scratch.clear();
        let entry = (fingerprint(&r.src), WireRecord::of(r, elapsed_s));
        let encoded = postcard::to_io(&entry, &mut self.scratch).map(|_| ());
        let written = encoded.map_err(|e| failed("encode", e)).and_then(|()| {
            let len = u32::try_from(self.scratch.len()).map_err(|e| failed("frame", e))?;
            self.file.write_all(&len.to_le_bytes())?;
            self.file.write_all(&self.scratch)
        });
        match written {
            Ok(()) => self.count += 1,
            Err(e) => self.error = Some(e),
        }
    }

    /// Records pushed so far.
    pub fn len(&self) -> u64 {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Ends the writing; the records can now be read back from the first.
    pub fn finish(self) -> std::io::Result<Spilled> {
        if let Some(e) = self.error {
            return Err(failed("write", e));
        }
        let mut file = self
            .file
            .into_inner()
            .map_err(|e| failed("write", e.error()))?;
        file.rewind().map_err(|e| failed("read", e))?;
        Ok(Spilled {
            file: BufReader::with_capacity(1 << 16, file),
            left: self.count,
        })
    }
}

impl Spilled {
    /// Records not read yet.
    pub fn len(&self) -> u64 {
        self.left
    }

    pub fn is_empty(&self) -> bool {
        self.left == 0
    }

    /// The next `n` records (fewer at the end), still encoded, in one buffer: [`decode`] each.
    pub fn read(&mut self, n: usize) -> std::io::Result<Frames> {
        let n = n.min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let mut frames = Frames {
            bytes: Vec::new(),
            ends: Vec::with_capacity(n),
        };
        for _ in 0..n {
            let mut len = [0u8; 4];
            self.file
                .read_exact(&mut len)
                .map_err(|e| failed("read", e))?;
            // Read as the bytes come, not allocated from the length first: a damaged length
            // is a short read, never a 4 GB allocation.
            let len = u64::from(u32::from_le_bytes(len));
            let got = (&mut self.file).take(len).read_to_end(&mut frames.bytes);
            if got.map_err(|e| failed("read", e))? as u64 != len {
                return Err(failed("read", "the file ends inside a record"));
            }
            frames.ends.push(frames.bytes.len());
        }
        self.left -= n as u64;
        Ok(frames)
    }
}

/// Encoded records read back together ([`Spilled::read`]).
#[derive(Debug, Default)]
pub struct Frames {
    bytes: Vec<u8>,
    /// Where each record's bytes end.
    ends: Vec<usize>,
}

impl Frames {
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Record `i`'s bytes.
    pub fn get(&self, i: usize) -> &[u8] {
        let start = i.checked_sub(1).map_or(0, |j| self.ends[j]);
        &self.bytes[start..self.ends[i]]
    }
}

/// A spilled record back: the record, its program's fingerprint and its seconds into its shard.
pub fn decode(bytes: &[u8]) -> std::io::Result<(Record, u128, f64)> {
    let (print, w): (u128, WireRecord) =
        postcard::from_bytes(bytes).map_err(|e| failed("read", e))?;
    let elapsed_s = w.elapsed_s;
    Ok((w.into_record(), print, elapsed_s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_come_back_as_they_went_in() {
        let mut spill = Spill::new().expect("spill");
        let mut sent = Vec::new();
        for i in 0..1000u64 {
            let mut r = Record::sample(i, &format!("(* a{} x)", i % 7), "(* P x)", i as f64);
            if i % 3 == 0 {
                r.train_loss = f64::NAN;
                r.status = "non-finite";
                r.detail = Some(format!("why {i}"));
            }
            r.params.insert("a".into(), -(i as f64) / 3.0);
            spill.push(&r, i as f64 * 0.25);
            sent.push(r);
        }
        assert_eq!(spill.len(), 1000);
        let mut back = spill.finish().expect("finish");
        let mut got = Vec::new();
        while !back.is_empty() {
            let chunk = back.read(64).expect("read");
            assert!(!chunk.is_empty() && chunk.len() <= 64);
            got.extend((0..chunk.len()).map(|i| decode(chunk.get(i)).expect("decodes")));
        }
        assert!(back.read(64).expect("at the end").is_empty());
        assert_eq!(got.len(), sent.len());
        for (i, ((r, print, at), sent)) in got.iter_mut().zip(&sent).enumerate() {
            // Programs are numbered by the merge.
            r.program = sent.program;
            assert_eq!(*print, fingerprint(&sent.src));
            assert_eq!(*at, i as f64 * 0.25);
            assert_eq!(
                serde_json::to_string(&r.log_line(*at)).expect("json"),
                serde_json::to_string(&sent.log_line(*at)).expect("json")
            );
            assert_eq!((&r.src, &r.skeleton), (&sent.src, &sent.skeleton));
        }
    }

    #[test]
    fn a_damaged_spill_is_an_error_not_a_panic() {
        let mut spill = Spill::new().expect("spill");
        spill.push(&Record::sample(0, "(* a x)", "(* P x)", 1.0), 0.0);
        let mut back = spill.finish().expect("finish");
        let frames = back.read(1).expect("read");
        let bytes = frames.get(0);
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        // Past the end: a short read is an error.
        back.left = 1;
        assert!(back.read(1).is_err());
    }
}
