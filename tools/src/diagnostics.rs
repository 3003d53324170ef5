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
    let line_len = src.lines().nth(line.saturating_sub(1)).map_or(0, str::len);
    if line_len > LONGEST_SHOWN_LINE {
        return format!(
            "{head}
(line {line} is {line_len} bytes long: not shown)"
        );
    }
    let start = (span.start as usize).min(src.len());
    let end = (span.end as usize).clamp(start, src.len());
    let diag = ProgramDiagnostic {
        kind: err.kind.to_string(),
        message: err.message.clone(),
        src: NamedSource::new(name, src.to_string()),
        span: Some((start, (end - start).max(usize::from(start < src.len()))).into()),
        help: err
            .lanes
            .as_ref()
            .filter(|l| l.len() > 1)
            .map(|l| format!("raised with {} lanes active", l.len())),
    };
    let mut out = String::new();
    let handler =
        GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor()).with_width(100);
    if handler.render_report(&mut out, &diag).is_err() {
        return head;
    }
    format!("{head}\n{out}")
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
