//! A shard's calibrations kept on disk until the merge, so that a sharded search's memory stays
//! flat however long it runs ([`crate::shards::local`]).
//!
//! The merge needs every record of shard 0 before any of shard 1's, while all of a round's shards
//! run at once: all but one shard's records must wait. Held in memory they cost about 2 KB each
//! (254 MB for 120,000 calibrations of the scalar task); here each is appended, as its shard
//! finishes it, to a temporary file (in `TMPDIR`, removed once its part is merged, or when the
//! search ends) in a compact binary form (postcard), and read back in order, a chunk at a time,
//! by the merge. The disk used is at most about two thirds of the log's size. A file is open only
//! while its shard writes it and while the merge reads it: a round of thousands of shards keeps
//! thousands of files, not thousands of open files (the usual limit is 1,024).
//!
//! A record crosses the file exactly as it crosses the wire to a cluster: a [`WireRecord`]
//! (numbers as their bits), with its program's [`fingerprint`] taken while the shard still runs.

use crate::log::fingerprint;
use crate::record::Record;
use crate::record::WireRecord;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use tempfile::TempPath;

/// Where a running shard's records go ([`Spill::push`]), then read back ([`Spill::finish`]).
#[derive(Debug)]
pub struct Spill {
    file: BufWriter<tempfile::NamedTempFile>,
    /// One record's bytes, reused.
    scratch: Vec<u8>,
    count: u64,
    /// Bytes written.
    bytes: u64,
    /// The first write that failed: the rest are skipped and [`Spill::finish`] reports it.
    error: Option<std::io::Error>,
}

/// The folder in `TMPDIR` a run's spills go into, removed with them when it is dropped — or by
/// a second Ctrl-C, which exits at once ([`ndvm_systems::exit`]).
#[derive(Debug)]
pub struct Spills {
    dir: tempfile::TempDir,
    _registered: ndvm_systems::exit::Temporary,
}

impl Spills {
    /// A new folder for a run's spills (the first sign that `TMPDIR` is unusable, before the
    /// run has written anything).
    pub fn new() -> std::io::Result<Spills> {
        let dir = (tempfile::Builder::new().prefix("ndvm-shards-"))
            .tempdir()
            .map_err(|e| failed("keep", e))?;
        let registered = ndvm_systems::exit::temporary(dir.path().to_path_buf());
        Ok(Spills {
            dir,
            _registered: registered,
        })
    }

    /// A new spill in this folder.
    pub fn spill(&self) -> std::io::Result<Spill> {
        Spill::new_in(self.dir.path())
    }
}

/// A finished shard's records on disk, read back in order.
#[derive(Debug)]
pub struct Spilled {
    /// The file, removed when this is dropped.
    path: TempPath,
    /// Opened by the first read.
    file: Option<BufReader<File>>,
    left: u64,
    /// Bytes not read yet: a record's length is checked against them.
    bytes_left: u64,
}

/// Why a spill could not be written or read back.
fn failed(what: &str, e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(format!(
        "cannot {what} a shard's records in a temporary file (in {}): {e}",
        std::env::temp_dir().display()
    ))
}

impl Spill {
    /// An empty spill in a new temporary file in `TMPDIR`.
    pub fn new() -> std::io::Result<Spill> {
        Spill::new_in(&std::env::temp_dir())
    }

    /// An empty spill in a new temporary file in `dir` ([`Spills`]).
    pub fn new_in(dir: &std::path::Path) -> std::io::Result<Spill> {
        let file = (tempfile::Builder::new().prefix("ndvm-shard-"))
            .tempfile_in(dir)
            .map_err(|e| failed("keep", e))?;
        Ok(Spill {
            file: BufWriter::with_capacity(1 << 16, file),
            scratch: Vec::new(),
            count: 0,
            bytes: 0,
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
        let written = encoded.map_err(std::io::Error::other).and_then(|()| {
            let len = u32::try_from(self.scratch.len()).map_err(std::io::Error::other)?;
            self.file.write_all(&len.to_le_bytes())?;
            self.file.write_all(&self.scratch)
        });
        match written {
            Ok(()) => {
                self.count += 1;
                self.bytes += 4 + self.scratch.len() as u64;
            }
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
        let file = (self.file.into_inner()).map_err(|e| failed("write", e.error()))?;
        // Closed until the merge reads it.
        Ok(Spilled {
            path: file.into_temp_path(),
            file: None,
            left: self.count,
            bytes_left: self.bytes,
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
        if n == 0 {
            return Ok(frames);
        }
        let file = match &mut self.file {
            Some(file) => file,
            None => {
                let opened = File::open(&self.path).map_err(|e| failed("read", e))?;
                self.file.insert(BufReader::with_capacity(1 << 16, opened))
            }
        };
        for _ in 0..n {
            let mut len = [0u8; 4];
            file.read_exact(&mut len).map_err(|e| failed("read", e))?;
            // A damaged length is refused before anything is allocated for it: no record
            // is longer than the bytes left.
            let len = u64::from(u32::from_le_bytes(len));
            let Some(left) = self.bytes_left.checked_sub(4 + len) else {
                return Err(failed("read", "the file ends inside a record"));
            };
            let start = frames.bytes.len();
            frames.bytes.resize(start + len as usize, 0);
            (file.read_exact(&mut frames.bytes[start..])).map_err(|e| failed("read", e))?;
            self.bytes_left = left;
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
    let ((print, w), rest): ((u128, WireRecord), _) =
        postcard::take_from_bytes(bytes).map_err(|e| failed("read", e))?;
    if !rest.is_empty() {
        return Err(failed("read", "a record is longer than its contents"));
    }
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
        // The file is removed with its records, and closed until the merge reads it.
        let path = back.path.to_path_buf();
        assert!(path.exists());
        drop(back);
        assert!(!path.exists());
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
        // A byte too many is an error too.
        let longer = [bytes, &[0]].concat();
        assert!(decode(bytes).is_ok() && decode(&longer).is_err());
        // Past the end: a short read is an error.
        back.left = 1;
        assert!(back.read(1).is_err());
        // A length longer than the bytes left is refused before it is read.
        let mut spill = Spill::new().expect("spill");
        spill.push(&Record::sample(0, "(* a x)", "(* P x)", 1.0), 0.0);
        let mut back = spill.finish().expect("finish");
        back.bytes_left -= 1;
        assert!(back.read(1).is_err());
    }

    /// Finished spills waiting for the merge hold no open file: a round of thousands of shards
    /// would otherwise run out of them.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_finished_spill_keeps_no_file_open() {
        let open = |paths: &[std::path::PathBuf]| {
            let fds = std::fs::read_dir("/proc/self/fd").expect("fds");
            (fds.flatten())
                .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                .filter(|target| paths.contains(target))
                .count()
        };
        let mut waiting = Vec::new();
        for i in 0..50 {
            let mut spill = Spill::new().expect("spill");
            spill.push(&Record::sample(i, "(* a x)", "(* P x)", 1.0), 0.0);
            waiting.push(spill.finish().expect("finish"));
        }
        let paths: Vec<_> = waiting.iter().map(|s| s.path.to_path_buf()).collect();
        assert_eq!(open(&paths), 0);
        // Reading opens one.
        let read = waiting[7].read(1).expect("read").len();
        assert_eq!((read, open(&paths)), (1, 1));
    }
}
