//! Warnings about a candidate's setup that would otherwise pass silently.
//!
//! A parameter the program never mentions keeps its starting value — printed beside the
//! fitted constants it would look fitted; one whose gradient stayed exactly zero is not
//! identified by the data. Neither stops the fit; both are reported with the candidate (the
//! table and the results JSON). (A parameter named like a data column or a shared input is an
//! error before the fit: `population::name_clash`.)

use ndvm_components::{FitSpec, History};

/// The warnings for one candidate, in parameter order. `history` says which parameters
/// ever had a nonzero gradient (empty before the first step: nothing is said about them).
pub fn of_candidate(spec: &FitSpec, source: &str, history: &History) -> Vec<String> {
    let atoms: std::collections::HashSet<&str> = atoms(source).collect();
    let mut out = Vec::new();
    for (p, name) in spec.params.iter().enumerate() {
        if !atoms.contains(name.as_str()) {
            out.push(format!(
                "the parameter `{name}` does not appear in the program: its value is its \
                 starting value, not fitted"
            ));
        } else if history.grad_seen.get(p) == Some(&false) {
            out.push(format!(
                "the parameter `{name}` is not identified: its gradient was exactly zero on \
                 every step (the loss does not depend on it here), so its value is its \
                 starting value"
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
    fn unused_and_unidentified_parameters_are_named() {
        let spec = FitSpec {
            params: vec!["A".into(), "k".into(), "t".into()],
            data: Some(Arc::new(Dataset {
                dropped_rows: Vec::new(),
                inputs: [("t".to_string(), vec![0.0, 1.0])].into(),
                target: vec![1.0, 2.0],
                train: vec![true, true],
                names: Default::default(),
            })),
            bounds: Vec::new(),
            restarts: 1,
            loss: ndvm_components::scene::Loss::Mse,
            shared: Arc::default(),
            optimizer: ndvm_components::Optimizer::default(),
            steps: 1,
            tolerance: None,
        };
        let history = History {
            grad_seen: vec![true, false, false],
            ..History::default()
        };
        let w = of_candidate(
            &spec,
            "(* A (exp (- 0 (* kk t)))) ; k in a comment",
            &history,
        );
        assert_eq!(
            w,
            [
                "the parameter `k` does not appear in the program: its value is its starting \
                 value, not fitted",
                "the parameter `t` is not identified: its gradient was exactly zero on every \
                 step (the loss does not depend on it here), so its value is its starting value",
            ]
        );
        // Before the first step nothing is known of gradients: only unused names are said.
        let before = History::default();
        assert!(of_candidate(&spec, "(* A k t)", &before).is_empty());
        assert_eq!(of_candidate(&spec, "(* A t)", &before).len(), 1);
    }
}
