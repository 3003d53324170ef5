//! Rendering engine errors for people (miette, with the offending line and a marker) and for
//! scripts (a JSON object).

use miette::{Diagnostic, GraphicalReportHandler, GraphicalTheme, NamedSource, SourceSpan};
use ndvm_engine::Error;

#[derive(Debug, thiserror::Error, Diagnostic)]
#[error("{kind} error: {message}")]
struct ProgramDiagnostic {
    kind: String,
    message: String,
    #[source_code]
    src: NamedSource<String>,
    #[label("here")]
    span: Option<SourceSpan>,
    #[help]
    help: Option<String>,
}

/// Lines longer than this (in bytes) are not excerpted.
const LONGEST_SHOWN_LINE: usize = 4096;

/// The most lines of one form an excerpt prints.
const MOST_SHOWN_LINES: usize = 24;

/// `error: type error at prog.scm:1:1: …` followed by the source excerpt.
pub fn render(err: &Error, name: &str, src: &str) -> String {
    let (line, col) = err.span.map_or((0, 0), |s| s.line_col(src));
    let head = match err.span {
        Some(_) => format!(
            "error: {} error at {name}:{line}:{col} (line {line}, column {col}): {}",
            err.kind, err.message
        ),
        None => format!("error: {} error: {}", err.kind, err.message),
    };
    let Some(span) = err.span else { return head };
    // The excerpt renderer cannot place columns past 65,535 (and nobody reads such a line):
    // long lines get the location alone.
    // A span from bytes that are not the text's (a binary bytecode file read as text, a span
    // past a replaced character) may fall inside a character: widen it to whole characters.
    let start = src.floor_char_boundary((span.start as usize).min(src.len()));
    let end = src.ceil_char_boundary((span.end as usize).clamp(start, src.len()));
    // The lines the excerpt would print: those the span covers, and one either side.
    let mut last = line + src[start..end].matches('\n').count();
    // A form over many lines is pointed at by its first line (the excerpt would print them all).
    let mut end = end;
    let mut spans_lines = String::new();
    if last - line >= MOST_SHOWN_LINES {
        spans_lines = format!("\n(the form spans lines {line}–{last}: its first line is shown)");
        end = src[start..].find('\n').map_or(src.len(), |i| start + i);
        last = line;
    }
    let mut context = 1;
    // One pass over those lines (1-based numbers), from the one before the span to the one after
    // (a per-line lookup would rescan the text for every line a long span covers).
    let around = src.lines().enumerate().map(|(i, l)| (i + 1, l.len()));
    for (l, len) in around
        .skip(line.saturating_sub(2))
        .take_while(|&(l, _)| l <= last + 1)
    {
        if len <= LONGEST_SHOWN_LINE {
            continue;
        }
        if (line..=last).contains(&l) {
            return format!(
                "{head}
(line {l} is {len} bytes long: not shown)"
            );
        }
        context = 0; // a neighbour too long to print: the span's own lines only
    }
    let diag = ProgramDiagnostic {
        kind: err.kind.to_string(),
        message: err.message.clone(),
        src: NamedSource::new(name, src.to_string()),
        span: Some((start, (end - start).max(first_char_len(&src[start..]))).into()),
        help: err
            .lanes
            .as_ref()
            .filter(|l| l.len() > 1)
            .map(|l| format!("raised with {} lanes active", l.len())),
    };
    let mut out = String::new();
    let handler = GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor())
        .with_width(100)
        .with_context_lines(context);
    if handler.render_report(&mut out, &diag).is_err() {
        return head;
    }
    format!("{head}\n{out}{spans_lines}")
}

/// The byte length of the first character of `s` (0 when empty): an empty span's marker.
fn first_char_len(s: &str) -> usize {
    s.chars().next().map_or(0, char::len_utf8)
}

/// `{"kind", "message", "line", "column"}`.
pub fn json(err: &Error, src: &str) -> serde_json::Value {
    let (line, col) = err.span.map_or((0, 0), |s| s.line_col(src));
    serde_json::json!({
        "kind": err.kind.name(),
        "message": err.message,
        "line": line,
        "column": col,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndvm_engine::error::{ErrorKind, Span};

    /// A span whose ends fall inside multi-byte characters renders them whole instead of
    /// panicking (binary bytecode read as text once did: `byte index … is not a char boundary`).
    #[test]
    fn a_span_inside_a_character_is_widened_to_whole_characters() {
        let src = "(+ x ééé)\n✓✓\n";
        for start in 0..src.len() as u32 {
            for end in [start, start + 1, start + 3, src.len() as u32 + 4] {
                let err = Error::new(ErrorKind::Syntax, "bad", Span::new(start, end));
                let text = render(&err, "p.scm", src);
                assert!(text.starts_with("error: syntax error at p.scm:"), "{text}");
            }
        }
        let err = Error::new(ErrorKind::Syntax, "bad", Span::new(6, 7));
        let text = render(&err, "p.scm", src);
        assert!(text.contains("p.scm:1:6"), "{text}");
    }
}
