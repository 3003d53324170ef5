//! Errors: every failure a program can cause is a value with a kind, a message and a span.
//!
//! docs/language-reference.md §10 fixes the kinds. Errors raised during the walk also carry the
//! lanes that were active. Nothing a program does may panic; the walk turns every problem into an
//! [`Error`].

use std::fmt;

/// A byte range `[start, end)` in the program text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub const fn new(start: u32, end: u32) -> Self {
        Span { start, end }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }

    /// 1-based line and column (in characters) of the span's start within `src`.
    pub fn line_col(self, src: &str) -> (usize, usize) {
        let start = (self.start as usize).min(src.len());
        let before = src.get(..start).unwrap_or(src);
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, col)
    }
}

/// The error kinds of docs/language-reference.md §10.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    Syntax,
    Unbound,
    Arity,
    Type,
    Shape,
    Divergence,
    Limit,
    /// A host-side problem with the inputs (a lane list of the wrong length, a missing input).
    Input,
}

impl ErrorKind {
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Syntax => "syntax",
            ErrorKind::Unbound => "unbound",
            ErrorKind::Arity => "arity",
            ErrorKind::Type => "type",
            ErrorKind::Shape => "shape",
            ErrorKind::Divergence => "divergence",
            ErrorKind::Limit => "limit",
            ErrorKind::Input => "input",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What an error says. [`Error`] boxes it so results stay small on the walk's hot path.
#[derive(Clone, Debug, PartialEq)]
pub struct ErrorData {
    pub kind: ErrorKind,
    pub message: String,
    /// Absent only for errors that concern no source text (bad inputs).
    pub span: Option<Span>,
    /// The lanes active when a walk error was raised (`None` for errors before evaluation).
    pub lanes: Option<Vec<u32>>,
}

/// A located error; its fields are those of [`ErrorData`] (`e.kind`, `e.message`, …).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{} error: {}", .0.kind, .0.message)]
pub struct Error(Box<ErrorData>);

impl std::ops::Deref for Error {
    type Target = ErrorData;
    fn deref(&self) -> &ErrorData {
        &self.0
    }
}

impl std::ops::DerefMut for Error {
    fn deref_mut(&mut self) -> &mut ErrorData {
        &mut self.0
    }
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>, span: Span) -> Self {
        Error(Box::new(ErrorData {
            kind,
            message: message.into(),
            span: Some(span),
            lanes: None,
        }))
    }

    pub fn unlocated(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error(Box::new(ErrorData {
            kind,
            message: message.into(),
            span: None,
            lanes: None,
        }))
    }

    pub fn syntax(message: impl Into<String>, span: Span) -> Self {
        Error::new(ErrorKind::Syntax, message, span)
    }

    /// Renders `kind error: message` plus the line, column, source line and a marker.
    pub fn render(&self, src: &str) -> String {
        let mut out = format!("{} error: {}", self.kind, self.message);
        if let Some(span) = self.span {
            let (line, col) = span.line_col(src);
            let text = src.lines().nth(line - 1).unwrap_or("");
            let width = text.chars().count().saturating_sub(col - 1).max(1);
            let len = (src
                .get(span.start as usize..span.end as usize)
                .map_or(1, |s| s.lines().next().map_or(1, |l| l.chars().count())))
            .clamp(1, width);
            out = format!(
                "{out}\n  at line {line}, column {col}\n   |\n{line:>3}| {text}\n   | {}{}",
                " ".repeat(col - 1),
                "^".repeat(len)
            );
        }
        out
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
