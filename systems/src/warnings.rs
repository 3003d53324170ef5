//! Warnings about a candidate's setup that would otherwise pass silently.
//!
//! A parameter the program never mentions keeps its starting value — printed beside the
//! fitted constants it would look fitted. A parameter that shares its name with a data column
//! or a shared input is ambiguous to the reader. Neither stops the fit; both are reported with
//! the candidate (the table and the results JSON).

use ndvm_components::FitSpec;

/// The warnings for one candidate, in parameter order.
pub fn of_candidate(spec: &FitSpec, source: &str) -> Vec<String> {
    let atoms: std::collections::HashSet<&str> = atoms(source).collect();
    let mut out = Vec::new();
    for name in &spec.params {
        if !atoms.contains(name.as_str()) {
            out.push(format!(
                "the parameter `{name}` does not appear in the program: its value is its \
                 starting value, not fitted"
            ));
        }
        let column = spec
            .data
            .as_ref()
            .is_some_and(|d| d.inputs.contains_key(name));
        let shared = spec.shared.numbers.iter().any(|(n, _)| n == name)
            || spec.shared.matrices.iter().any(|m| &m.name == name);
        if column || shared {
            out.push(format!(
                "the parameter `{name}` has the name of a {}: rename one of them",
                if column {
                    "data column"
                } else {
                    "shared input"
                }
            ));
        }
    }
    out
}

/// The program's atoms (symbols and literals), outside strings and comments.
fn atoms(source: &str) -> impl Iterator<Item = &str> {
    source
        .lines()
        .map(|l| l.split(';').next().unwrap_or(""))
        .flat_map(|l| l.split(|c: char| c.is_whitespace() || "()[]'`,\"".contains(c)))
        .filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndvm_components::Dataset;
    use std::sync::Arc;

    #[test]
    fn unused_and_shadowing_parameters_are_named() {
        let spec = FitSpec {
            params: vec!["A".into(), "k".into(), "t".into()],
            data: Some(Arc::new(Dataset {
                inputs: [("t".to_string(), vec![0.0, 1.0])].into(),
                target: vec![1.0, 2.0],
                train: vec![true, true],
            })),
            bounds: Vec::new(),
            restarts: 1,
            loss: ndvm_components::scene::Loss::Mse,
            shared: Arc::default(),
            optimizer: ndvm_components::Optimizer::default(),
            steps: 1,
            tolerance: None,
        };
        let w = of_candidate(&spec, "(* A (exp (- 0 (* kk t)))) ; k in a comment");
        assert_eq!(
            w,
            [
                "the parameter `k` does not appear in the program: its value is its starting \
                 value, not fitted",
                "the parameter `t` has the name of a data column: rename one of them",
            ]
        );
        assert!(of_candidate(&spec, "(* A k t)").len() == 1);
    }
}
