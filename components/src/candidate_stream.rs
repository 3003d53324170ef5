//! Candidate streams: JSON-lines files of proposed programs, one candidate a line.
//!
//! A line is `{"src": "(* a x)", "params": ["a"]}` (the reference co-search format; other
//! fields, like `skeleton`, are ignored; `params` may be left out). A fit's `Stream(..)`
//! candidates and a search's `Stream` proposer both read their file here, so both skip and
//! count the same lines and word the same warnings:
//!
//! - blank lines are skipped silently;
//! - a line that is not such an object, or that the caller refuses (two parameters with one
//!   name, say), is skipped; the first [`NAMED_WARNINGS`] are named with their line, and one
//!   more warning counts them all;
//! - `take` counts the candidates accepted, not the lines read;
//! - a stream without one accepted line is an error: the first refused line's, or "no
//!   candidates".
//!
//! ```
//! use ndvm_components::candidate_stream::{self, Entry};
//!
//! let text = "{\"src\": \"(* a x)\", \"params\": [\"a\"]}\nnot json\n{\"src\": \"x\"}\n";
//! let mut got = Vec::new();
//! let read = candidate_stream::parse(text, "c.jsonl", None, |e: Entry| {
//!     got.push((e.line, e.src));
//!     Ok(())
//! })
//! .unwrap();
//! assert_eq!(got, [(1, "(* a x)".to_string()), (3, "x".to_string())]);
//! assert_eq!(read.skipped, 1);
//! assert!(read.warnings[0].starts_with("c.jsonl, line 2: skipped: "));
//! assert_eq!(read.warnings[1], "c.jsonl: 1 malformed line skipped, 2 candidates read");
//! ```

use crate::input_file;
use std::path::Path;

/// Refused lines named one by one in the warnings (the rest are counted).
pub const NAMED_WARNINGS: usize = 10;

/// One well-formed line.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// 1-based line number in the file.
    pub line: usize,
    pub src: String,
    /// The candidate's parameter names, when the line gives them.
    pub params: Option<Vec<String>>,
}

/// What a stream gave: counts and the warnings to show.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reading {
    pub accepted: usize,
    pub skipped: usize,
    pub warnings: Vec<String>,
}

/// Why a stream gave nothing.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum StreamError {
    #[error("{shown}: {message}")]
    File { shown: String, message: String },
    #[error("{shown}, line {line}: {message}")]
    Line {
        shown: String,
        line: usize,
        message: String,
    },
    #[error("{shown}: no candidates (the stream has no line, or `take` is 0)")]
    Empty { shown: String },
}

#[derive(serde::Deserialize)]
struct Line {
    src: String,
    #[serde(default)]
    params: Option<Vec<String>>,
}

/// Reads the stream at `path` (named `shown` in messages) within the input size limit, and
/// [`parse`]s it.
pub fn read(
    path: &Path,
    shown: &str,
    take: Option<usize>,
    accept: impl FnMut(Entry) -> Result<(), String>,
) -> Result<Reading, StreamError> {
    let text =
        input_file::read(path, input_file::TEXT_LIMIT).map_err(|message| StreamError::File {
            shown: shown.to_string(),
            message,
        })?;
    parse(&text, shown, take, accept)
}

/// Offers every well-formed line of `text` to `accept` until `take` were accepted; a line
/// `accept` refuses (with the reason) is skipped like a malformed one.
pub fn parse(
    text: &str,
    shown: &str,
    take: Option<usize>,
    mut accept: impl FnMut(Entry) -> Result<(), String>,
) -> Result<Reading, StreamError> {
    let mut reading = Reading::default();
    let mut first_refusal = None;
    let lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    for (i, line) in lines {
        if reading.accepted >= take.unwrap_or(usize::MAX) {
            break;
        }
        let offered = serde_json::from_str::<Line>(line)
            .map_err(|e| e.to_string())
            .and_then(|l| {
                accept(Entry {
                    line: i + 1,
                    src: l.src,
                    params: l.params,
                })
            });
        let Err(message) = offered else {
            reading.accepted += 1;
            continue;
        };
        reading.skipped += 1;
        if reading.skipped <= NAMED_WARNINGS {
            reading
                .warnings
                .push(format!("{shown}, line {}: skipped: {message}", i + 1));
        }
        first_refusal.get_or_insert((i + 1, message));
    }
    if reading.accepted == 0 {
        return Err(match first_refusal {
            Some((line, message)) => StreamError::Line {
                shown: shown.to_string(),
                line,
                message,
            },
            None => StreamError::Empty {
                shown: shown.to_string(),
            },
        });
    }
    if reading.skipped > 0 {
        reading.warnings.push(format!(
            "{shown}: {} malformed line{} skipped, {} candidate{} read",
            reading.skipped,
            if reading.skipped == 1 { "" } else { "s" },
            reading.accepted,
            if reading.accepted == 1 { "" } else { "s" }
        ));
    }
    Ok(reading)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str, take: Option<usize>) -> Result<(Vec<usize>, Reading), StreamError> {
        let mut lines = Vec::new();
        let r = parse(text, "s", take, |e| {
            if e.params
                .as_ref()
                .is_some_and(|p| p.len() > 1 && p[0] == p[1])
            {
                return Err("the parameter is listed twice".into());
            }
            lines.push(e.line);
            Ok(())
        })?;
        Ok((lines, r))
    }

    #[test]
    fn take_counts_accepted_candidates_not_lines() {
        let text = "junk\n{\"src\": \"a\", \"params\": [\"a\", \"a\"]}\n{\"src\": \"1\"}\n\n{\"src\": \"2\"}\n{\"src\": \"3\"}\n";
        let (lines, r) = all(text, Some(2)).expect("reads");
        assert_eq!(lines, [3, 5]);
        assert_eq!((r.accepted, r.skipped), (2, 2));
        assert_eq!(
            r.warnings[1],
            "s, line 2: skipped: the parameter is listed twice"
        );
        assert_eq!(
            r.warnings[2],
            "s: 2 malformed lines skipped, 2 candidates read"
        );
    }

    #[test]
    fn many_bad_lines_are_named_up_to_the_cap_and_counted() {
        let text = "x\n".repeat(25) + "{\"src\": \"1\"}\n";
        let (_, r) = all(&text, None).expect("reads");
        assert_eq!(r.warnings.len(), NAMED_WARNINGS + 1);
        assert_eq!(
            r.warnings[NAMED_WARNINGS],
            "s: 25 malformed lines skipped, 1 candidate read"
        );
    }

    #[test]
    fn a_stream_without_a_candidate_is_an_error_at_its_first_bad_line() {
        let e = all("\n\nnot json\n{}\n", None).expect_err("nothing");
        assert!(e.to_string().starts_with("s, line 3: "), "{e}");
        for (text, take) in [("\n \n", None), ("{\"src\": \"1\"}", Some(0))] {
            let e = all(text, take).expect_err("no candidates");
            assert!(e.to_string().starts_with("s: no candidates"), "{e}");
        }
    }
}
