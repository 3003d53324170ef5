//! The `Stream` proposer: a JSON-lines file of candidates, in order, cycled until the budget
//! ends (the reference co-search protocol). Each pass gives the same programs; the search draws
//! fresh starting values for every proposal, so a second pass is a new set of calibrations.
//!
//! A line is `{"src": "…", "params": ["a", "b"], …}` (other fields, such as `skeleton`, are
//! ignored). Blank lines are skipped; a malformed line is skipped with a warning naming the
//! file and line, and the count is reported.

use super::proposer::{Notes, Proposal, Proposer, ProposerError};
use std::path::Path;

#[derive(Debug)]
pub struct Stream {
    name: String,
    lines: Vec<Proposal>,
    next: usize,
    cycle: bool,
}

#[derive(serde::Deserialize)]
struct Line {
    src: String,
    #[serde(default)]
    params: Vec<String>,
}

impl Stream {
    /// Reads `path` (up to `take` candidates). Unreadable files are errors; malformed lines
    /// are warnings.
    pub fn open(
        path: &Path,
        shown: &str,
        take: Option<usize>,
        cycle: bool,
        notes: &mut Notes,
    ) -> Result<Stream, String> {
        let text = ndvm_components::input_file::read(path, ndvm_components::input_file::TEXT_LIMIT)
            .map_err(|e| format!("{shown}: {e}"))?;
        let stem = path
            .file_stem()
            .map_or_else(|| shown.to_string(), |s| s.to_string_lossy().into_owned());
        let mut lines = Vec::new();
        let mut skipped = 0;
        for (i, line) in text.lines().enumerate() {
            if lines.len() >= take.unwrap_or(usize::MAX) {
                break;
            }
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Line>(line) {
                Ok(l) => lines.push(Proposal {
                    src: l.src,
                    params: l.params,
                    name: format!("{stem}:{}", i + 1),
                }),
                Err(e) => {
                    skipped += 1;
                    if skipped <= 10 {
                        notes.warn(format!("{shown}, line {}: skipped: {e}", i + 1));
                    }
                }
            }
        }
        if skipped > 10 {
            notes.warn(format!("{shown}: {skipped} malformed lines skipped in all"));
        }
        if lines.is_empty() {
            return Err(format!("{shown}: no candidates"));
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
}

impl Proposer for Stream {
    fn name(&self) -> &str {
        &self.name
    }

    fn propose(&mut self, n: usize, _: &mut Notes) -> Result<Vec<Proposal>, ProposerError> {
        let mut out = Vec::with_capacity(n);
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
        assert_eq!(notes.warnings.len(), 1);
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
        let mut once = Stream::open(&path, "c.jsonl", Some(1), false, &mut notes).expect("once");
        assert_eq!(once.propose(5, &mut notes).expect("one").len(), 1);
        assert!(once.propose(5, &mut notes).expect("none").is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
