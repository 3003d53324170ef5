//! A failed candidate's error shown where it happened: the source line under the message, with
//! a marker at the column (as `ndvm run` shows a program's errors).

/// `detail` (`line L, column C: message`, as [`crate::machine::locate`] writes it) rendered
/// with the line of `src` it points at; `None` when the detail carries no location.
pub fn render(src: &str, detail: &str) -> Option<String> {
    let rest = detail.strip_prefix("line ")?;
    let (line, rest) = rest.split_once(", column ")?;
    let (column, _) = rest.split_once(':')?;
    at(src, line.parse().ok()?, column.parse().ok()?)
}

/// Line `line` of `src` (1-based) and a marker under `column`; `None` past the end. The one
/// rendering of a located error's source line (scene errors use it too).
pub fn at(src: &str, line: usize, column: usize) -> Option<String> {
    let text = src.lines().nth(line.checked_sub(1)?)?;
    Some(format!(
        "{line:>5} | {text}\n{:>5} | {}^",
        "",
        " ".repeat(column.saturating_sub(1))
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_and_a_marker_at_the_column() {
        let src = "(define (f a)\n  (+ a (car 5)))\n(f 1)";
        assert_eq!(
            render(src, "line 2, column 8: type error: `car`: expected a pair").as_deref(),
            Some("    2 |   (+ a (car 5)))\n      |        ^")
        );
        assert_eq!(render(src, "the loss is NaN"), None);
        assert_eq!(render(src, "line 9, column 1: x"), None);
    }
}
