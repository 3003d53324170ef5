//! The `Stream` proposer: a JSON-lines file of candidates, in order, cycled until the budget
//! ends (the reference co-search protocol). Each pass gives the same programs; the search draws
//! fresh starting values for every proposal, so a second pass is a new set of calibrations.
//!
//! The file is read as a fit reads its `Stream(..)` candidates ([`candidate_stream`]): a
//! malformed line is skipped with a warning naming the file and line, and the count is reported.

use crate::proposers::{Notes, Proposal, Proposer, ProposerError};
use ndvm_components::candidate_stream;
use std::path::Path;

#[derive(Debug)]
pub struct Stream {
    name: String,
    lines: Vec<Proposal>,
    next: usize,
    cycle: bool,
}

impl Stream {
    /// Reads `path` (up to `take` candidates, [`candidate_stream`]). Unreadable files and
    /// streams without a candidate are errors; malformed lines are warnings.
    pub fn open(
        path: &Path,
        shown: &str,
        take: Option<usize>,
        cycle: bool,
        notes: &mut Notes,
    ) -> Result<Stream, String> {
        let stem = path
            .file_stem()
            .map_or_else(|| shown.to_string(), |s| s.to_string_lossy().into_owned());
        let mut lines = Vec::new();
        let reading = candidate_stream::read(path, shown, take, |entry| {
            // Refused here, once, rather than copied out and refused at every pass of a cycle
            // (a 60 MB line cycled 250 times copied 15 GB).
            if entry.src.len() > crate::run::MAX_SOURCE_BYTES {
                return Err(format!(
                    "the program is {} bytes, over the {} KiB limit of a search candidate",
                    entry.src.len(),
                    crate::run::MAX_SOURCE_BYTES >> 10
                ));
            }
            lines.push(Proposal {
                src: entry.src,
                params: entry.params.unwrap_or_default(),
                name: format!("{stem}:{}", entry.line),
            });
            Ok(())
        })
        .map_err(|e| e.to_string())?;
        for w in reading.warnings {
            notes.warn(w);
        }
        Ok(Stream {
            name: format!("stream {stem}"),
            lines,
            next: 0,
            cycle,
        })
    }

    /// Candidates in the file.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Keeps the lines of one shard of a sharded search: every `shards`-th, from `shard`.
    pub fn keep_share(&mut self, shard: usize, shards: usize) {
        self.lines = crate::shards::task::deal(std::mem::take(&mut self.lines), shard, shards);
    }
}

impl Proposer for Stream {
    fn name(&self) -> &str {
        &self.name
    }

    fn propose(&mut self, n: usize, _: &mut Notes) -> Result<Vec<Proposal>, ProposerError> {
        let mut out = Vec::with_capacity(n);
        if self.lines.is_empty() {
            return Ok(out);
        }
        while out.len() < n.max(1) {
            if self.next == self.lines.len() {
                if !self.cycle {
                    break;
                }
                self.next = 0;
            }
            out.push(self.lines[self.next].clone());
            self.next += 1;
        }
        Ok(out)
    }

    fn resume(&mut self, taken: u64) {
        let len = self.lines.len() as u64;
        self.next = match (self.cycle, len) {
            (_, 0) => 0,
            (true, _) => (taken % len) as usize,
            (false, _) => taken.min(len) as usize,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycles_in_order_and_skips_malformed_lines_with_their_place() {
        let dir = std::env::temp_dir().join(format!("ndvm-stream-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("c.jsonl");
        std::fs::write(
            &path,
            "{\"src\": \"(* a x)\", \"params\": [\"a\"]}\n\nnot json\n{\"src\": \"x\"}\n",
        )
        .expect("write");
        let mut notes = Notes::default();
        let mut s = Stream::open(&path, "c.jsonl", None, true, &mut notes).expect("stream");
        assert_eq!(s.len(), 2);
        assert_eq!(notes.warnings.len(), 2);
        assert!(
            notes.warnings[0].starts_with("c.jsonl, line 3: skipped"),
            "{notes:?}"
        );
        let got: Vec<String> = s
            .propose(5, &mut notes)
            .expect("propose")
            .into_iter()
            .map(|p| p.name)
            .collect();
        assert_eq!(got, ["c:1", "c:4", "c:1", "c:4", "c:1"]);
        // A shard keeps every other line and resumes after what it took before.
        let mut share = Stream::open(&path, "c.jsonl", None, true, &mut notes).expect("share");
        share.keep_share(1, 2);
        share.resume(3);
        let got: Vec<String> = share
            .propose(2, &mut notes)
            .expect("propose")
            .into_iter()
            .map(|p| p.name)
            .collect();
        assert_eq!(got, ["c:4", "c:4"]);
        let mut none = Stream::open(&path, "c.jsonl", None, true, &mut notes).expect("none");
        none.keep_share(2, 3);
        assert!(none.propose(4, &mut notes).expect("empty").is_empty());
        let mut once = Stream::open(&path, "c.jsonl", Some(1), false, &mut notes).expect("once");
        assert_eq!(once.propose(5, &mut notes).expect("one").len(), 1);
        assert!(once.propose(5, &mut notes).expect("none").is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
