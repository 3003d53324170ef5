//! Bare names for settings whose fields all have defaults: `optimizer: LevenbergMarquardt`
//! reads as `LevenbergMarquardt()`.
//!
//! RON writes a struct-like enum variant with parentheses even when every field is left out,
//! and a bare name fails with "Expected opening `(`" — an error people meet on their first
//! scene. serde gives a deserializer no way to look ahead for the `(`, so the scene reader asks
//! RON itself: when parsing fails with exactly that error right after one of the names below,
//! `()` is written after the name and the text is parsed again. An error found later is
//! reported at its place in the text as written.
//!
//! ```
//! use ndvm_components::scene::Scene;
//! use ndvm_components::Optimizer;
//!
//! let scene = Scene::from_ron(r#"Scene(
//!     candidates: [Inline(name: "c", src: "(* a a)")],
//!     optimizer: LevenbergMarquardt,
//!     loss: Mse,
//!     data: Some(Synthetic(program: "x", constants: {}, inputs: {"x": Linspace(0, 1, 4)})),
//! )"#).unwrap();
//! assert_eq!(scene.optimizer, Some(Optimizer::levenberg_marquardt()));
//! ```

use serde::de::DeserializeOwned;

/// The variants that may be written bare: every optimizer.
pub const NAMES: [&str; 4] = ["Adam", "Sgd", "LevenbergMarquardt", "Lbfgs"];

/// `ron::from_str`, with the names of [`NAMES`] accepted bare.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, ron::error::SpannedError> {
    let mut text = text.to_string();
    // Where `()` went in: (line, column just after the name), 1-based as RON's positions.
    let mut inserted: Vec<(usize, usize)> = Vec::new();
    loop {
        match ron::from_str::<T>(&text) {
            Ok(v) => return Ok(v),
            Err(mut e) => {
                let at = (e.span.start.line, e.span.start.col);
                let fixable =
                    matches!(e.code, ron::Error::ExpectedStructLike) && inserted.len() < 1000;
                match fixable.then(|| bare_name_before(&text, at)).flatten() {
                    Some((offset, line, col)) => {
                        text.insert_str(offset, "()");
                        inserted.push((line, col));
                    }
                    None => {
                        for pos in [&mut e.span.start, &mut e.span.end] {
                            let shift = inserted
                                .iter()
                                .filter(|&&(l, c)| l == pos.line && c < pos.col)
                                .count();
                            pos.col -= 2 * shift;
                        }
                        return Err(e);
                    }
                }
            }
        }
    }
}

/// If the text before `(line, col)` (skipping whitespace and comments, as RON does) ends with
/// one of [`NAMES`] as a whole word, the byte offset just after it and its (line, column).
fn bare_name_before(text: &str, (line, col): (usize, usize)) -> Option<(usize, usize, usize)> {
    let line_start = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum::<usize>();
    let this_line = text[line_start..].split('\n').next().unwrap_or("");
    let at = line_start
        + this_line
            .char_indices()
            .nth(col.saturating_sub(1))
            .map_or(this_line.len(), |(i, _)| i);
    let before = skip_back(&text[..at]);
    let name = NAMES.iter().find(|n| before.ends_with(**n))?;
    let start = before.len() - name.len();
    let boundary = text[..start]
        .chars()
        .next_back()
        .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
    if !boundary {
        return None;
    }
    let end = before.len();
    let end_line = text[..end].matches('\n').count() + 1;
    let end_col = text[..end]
        .rsplit('\n')
        .next()
        .map_or(0, |l| l.chars().count())
        + 1;
    Some((end, end_line, end_col))
}

/// `text` without its trailing whitespace, `/* … */` and `// …` comments.
fn skip_back(mut text: &str) -> &str {
    loop {
        let trimmed = text.trim_end();
        if let Some(open) = trimmed.strip_suffix("*/").and_then(|t| t.rfind("/*")) {
            text = &trimmed[..open];
            continue;
        }
        // A line comment: `//` on the last line, outside a string literal.
        let line_start = trimmed.rfind('\n').map_or(0, |i| i + 1);
        let last = &trimmed[line_start..];
        let comment = last
            .match_indices("//")
            .map(|(i, _)| i)
            .find(|&i| last[..i].matches('"').count().is_multiple_of(2));
        match comment {
            Some(i) => text = &trimmed[..line_start + i],
            None => return trimmed,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::Optimizer;
    use crate::scene::Scene;

    fn scene(optimizer: &str) -> Result<Scene, crate::scene::SceneError> {
        Scene::from_ron(&format!(
            "Scene(\n    candidates: [Inline(name: \"c\", src: \"(* a x)\")],\n    optimizer: {optimizer},\n    loss: Mse,\n    data: Some(Synthetic(program: \"x\", constants: {{}}, inputs: {{\"x\": Linspace(0, 1, 4)}})),\n)"
        ))
    }

    #[test]
    fn every_optimizer_reads_bare_as_with_empty_parentheses() {
        for name in super::NAMES {
            let bare = scene(name).map(|s| s.optimizer);
            let written = scene(&format!("{name}()")).map(|s| s.optimizer);
            assert!(bare.is_ok(), "{name}: {bare:?}");
            assert_eq!(bare, written, "{name}");
        }
        assert_eq!(
            scene("Adam").expect("adam").optimizer,
            Some(Optimizer::default())
        );
    }

    #[test]
    fn later_errors_keep_their_place_in_the_text_as_written() {
        let e = scene("Sgd, steps: -1").expect_err("bad steps");
        let plain = scene("Sgd(), steps: -1").expect_err("bad steps");
        assert_eq!((e.line, e.column + 2), (plain.line, plain.column), "{e}");
        // Names that are not optimizers, or are part of a longer word, keep RON's error.
        let e = scene("MyAdam").expect_err("unknown");
        assert!(e.message.contains("MyAdam"), "{e}");
        let e = scene("Adam(lr: 0.1").expect_err("unclosed");
        assert!(!e.message.is_empty());
    }

    #[test]
    fn a_bare_name_may_be_followed_by_comments() {
        for written in [
            "Lbfgs // quasi-Newton\n",
            "Lbfgs /* quasi-Newton */",
            "Lbfgs /* a */ // b\n",
        ] {
            let s = scene(written).unwrap_or_else(|e| panic!("{written}: {e}"));
            assert_eq!(s.optimizer.map(|o| o.name()), Some("Lbfgs"), "{written}");
        }
    }
}
