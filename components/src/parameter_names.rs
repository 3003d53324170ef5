//! Parameter names a scene refers to must be names it declares.
//!
//! A typo in an `init` or `bounds` key (`"K"` for `"k"`) would otherwise be ignored silently:
//! the parameter starts from 0, or runs unbounded, and the fit looks fine. So every key of
//! `init` and `bounds` must be one of `names` (when `names` is given; a stream's lines name
//! their own parameters, and then the keys are defaults for whichever lines use them), and the
//! error names the closest declared name and where the key is written.

use crate::scene::Parameters;

/// An `init` or `bounds` key that is not a declared parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct UnknownKey {
    pub message: String,
    /// The key, to locate it in the scene's text.
    pub key: String,
}

/// Checks `params` (of `whose`: "the scene" or a candidate's name): every key names a declared
/// parameter, and every value makes sense (finite starting values, bounds that are numbers with
/// `min ≤ max`, a finite non-negative restart scale).
pub fn check(params: &Parameters, whose: &str) -> Result<(), UnknownKey> {
    check_values(params, whose)?;
    if params.names.is_empty() {
        return Ok(());
    }
    let keys = params
        .init
        .keys()
        .map(|k| (k, "init"))
        .chain(params.bounds.keys().map(|k| (k, "bounds")));
    for (key, field) in keys {
        if params.names.iter().any(|n| n == key) {
            continue;
        }
        let hint = did_you_mean(key, &params.names)
            .map(|n| format!("; did you mean `{n}`?"))
            .unwrap_or_default();
        return Err(UnknownKey {
            message: format!(
                "`{field}` of {whose} names `{key}`, which is not one of its parameters ({}){hint}",
                params.names.join(", ")
            ),
            key: key.clone(),
        });
    }
    Ok(())
}

fn check_values(params: &Parameters, whose: &str) -> Result<(), UnknownKey> {
    let bad = |key: &str, message: String| UnknownKey {
        message,
        key: key.to_string(),
    };
    for (key, &x) in &params.init {
        if !x.is_finite() {
            return Err(bad(
                key,
                format!(
                    "`init` of {whose} starts `{key}` at {x}: a starting value must be a finite number"
                ),
            ));
        }
    }
    for (key, b) in &params.bounds {
        let nan = b.min.is_some_and(f64::is_nan) || b.max.is_some_and(f64::is_nan);
        let crossed = matches!((b.min, b.max), (Some(lo), Some(hi)) if lo > hi);
        if nan || crossed {
            return Err(bad(
                key,
                format!(
                    "`bounds` of {whose} for `{key}` are min {:?}, max {:?}: bounds must be numbers with min ≤ max",
                    b.min, b.max
                ),
            ));
        }
    }
    let scale = params.restarts.scale;
    if !(scale.is_finite() && scale >= 0.0) {
        return Err(bad(
            "scale",
            format!("`restarts.scale` of {whose} is {scale}: it must be a finite number ≥ 0"),
        ));
    }
    Ok(())
}

/// The closest of `names` to `name`, if it is close (a typo or a case slip).
pub fn did_you_mean<'a>(name: &str, names: &'a [String]) -> Option<&'a str> {
    names
        .iter()
        .map(|n| {
            let case = n.eq_ignore_ascii_case(name);
            let d = strsim::damerau_levenshtein(name, n);
            (n, if case { 0 } else { d })
        })
        .filter(|(n, d)| *d == 0 || *d <= (n.chars().count().max(name.chars().count()) / 3).max(1))
        .min_by_key(|(_, d)| *d)
        .map(|(n, _)| n.as_str())
}

/// The 1-based line and column of `"key"` written as a map key (`"key":`) in `text`.
pub fn locate(text: &str, key: &str) -> Option<(usize, usize)> {
    let quoted = format!("\"{key}\"");
    let mut from = 0;
    while let Some(at) = text[from..].find(&quoted).map(|i| i + from) {
        let after = text[at + quoted.len()..].trim_start();
        if after.starts_with(':') {
            return Some(line_col(text, at));
        }
        from = at + quoted.len();
    }
    None
}

/// Where a check's message points: the field named first in backticks (`split.train` →
/// `train`, `Normal(sd)` → `Normal`), if it is written exactly once in `text` (as `name:` or
/// `name(`). A field written several times is not guessed at.
pub fn locate_field(text: &str, message: &str) -> Option<(usize, usize)> {
    let quoted = message.split('`').nth(1)?;
    let head = quoted.split(['(', ':', ' ']).next()?;
    let field = head.rsplit('.').next()?;
    if field.is_empty() || !field.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return None;
    }
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut found = None;
    for (at, _) in text.match_indices(field) {
        let before = text[..at].chars().next_back();
        let after = text[at + field.len()..].trim_start().chars().next();
        if before.is_some_and(is_ident) || !matches!(after, Some(':' | '(')) {
            continue;
        }
        if found.is_some() {
            return None;
        }
        found = Some(line_col(text, at));
    }
    found
}

/// The 1-based line and column of byte offset `at` in `text` (columns count bytes, as RON's
/// own error positions do).
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let line = text[..at].matches('\n').count() + 1;
    let column = at - text[..at].rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(names: &[&str], init: &[&str]) -> Parameters {
        Parameters {
            names: names.iter().map(|s| s.to_string()).collect(),
            init: init.iter().map(|k| (k.to_string(), 1.0)).collect(),
            ..Parameters::default()
        }
    }

    #[test]
    fn unknown_keys_are_named_with_the_closest_parameter() {
        assert!(check(&params(&["k", "A"], &["k"]), "the scene").is_ok());
        assert!(check(&params(&[], &["anything"]), "the scene").is_ok());
        let e = check(&params(&["k", "A"], &["K"]), "the scene").expect_err("typo");
        assert_eq!(
            e.message,
            "`init` of the scene names `K`, which is not one of its parameters (k, A); \
             did you mean `k`?"
        );
        let e = check(&params(&["sigma"], &["sgima"]), "`gauss`").expect_err("swap");
        assert!(
            e.message.ends_with("did you mean `sigma`?"),
            "{}",
            e.message
        );
        let e = check(&params(&["alpha"], &["zzz"]), "`x`").expect_err("far");
        assert!(!e.message.contains("did you mean"), "{}", e.message);
    }

    #[test]
    fn checks_are_located_at_the_field_they_name_when_it_is_unique() {
        let text = "Scene(\n  data: Some(Csv(split: Split(train: 1.5))),\n  loss: Mse)";
        let m = "`split.train` must be in (0, 1], got 1.5";
        assert_eq!(locate_field(text, m), Some((2, 31)));
        assert_eq!(locate_field(text, "`loss: Mse` needs `data`"), Some((3, 3)));
        let twice = "Split(train: 0.5), Split(train: 1.5)";
        assert_eq!(locate_field(twice, m), None);
        assert_eq!(locate_field(text, "no field named"), None);
    }

    #[test]
    fn keys_are_located_where_they_are_map_keys() {
        let text = "names: [\"K\"],\n  init: {\"K\" : 1.0}";
        assert_eq!(locate(text, "K"), Some((2, 10)));
        assert_eq!(locate(text, "Q"), None);
    }
}
