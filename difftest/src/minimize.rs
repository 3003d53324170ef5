//! Shrinking a failing program: replace subexpressions by one of their operands or by a
//! constant, keep the change if the program still fails the same way, repeat until nothing
//! smaller fails (greedy, largest subtrees first, within a budget of attempts).

use crate::sexpr::Sx;

/// At most this many candidate programs are tried.
const BUDGET: usize = 400;

/// The smallest variant of `forms` found for which `still_fails(text)` holds.
pub fn minimize(forms: &[Sx], mut still_fails: impl FnMut(&str) -> bool) -> Vec<Sx> {
    let mut best = forms.to_vec();
    let mut tries = 0;
    'outer: loop {
        let mut paths = Vec::new();
        for (i, f) in best.iter().enumerate() {
            collect(f, vec![i], &mut paths);
        }
        // Largest subtrees first: the biggest cut that still fails wins.
        paths.sort_by_key(|p| std::cmp::Reverse(at(&best, p).map_or(0, Sx::size)));
        for path in paths {
            let Some(node) = at(&best, &path) else {
                continue;
            };
            for candidate in replacements(node) {
                if candidate.size() >= node.size() {
                    continue;
                }
                tries += 1;
                if tries > BUDGET {
                    break 'outer;
                }
                let trial = replaced(&best, &path, candidate);
                let text = crate::sexpr::program_text(&trial);
                if still_fails(&text) {
                    best = trial;
                    continue 'outer;
                }
            }
        }
        break;
    }
    best
}

fn collect(x: &Sx, path: Vec<usize>, out: &mut Vec<Vec<usize>>) {
    if let Sx::List(items) = x {
        for (i, c) in items.iter().enumerate().skip(1) {
            let mut p = path.clone();
            p.push(i);
            collect(c, p, out);
        }
    }
    out.push(path);
}

fn at<'a>(forms: &'a [Sx], path: &[usize]) -> Option<&'a Sx> {
    let mut cur = forms.get(path[0])?;
    for &i in &path[1..] {
        match cur {
            Sx::List(items) => cur = items.get(i)?,
            Sx::Atom(_) => return None,
        }
    }
    Some(cur)
}

fn replaced(forms: &[Sx], path: &[usize], new: Sx) -> Vec<Sx> {
    fn go(x: &Sx, path: &[usize], new: Sx) -> Sx {
        match (x, path.split_first()) {
            (_, None) => new,
            (Sx::List(items), Some((&i, rest))) => {
                let mut items = items.clone();
                items[i] = go(&items[i], rest, new);
                Sx::List(items)
            }
            (atom, Some(_)) => atom.clone(),
        }
    }
    let mut out = forms.to_vec();
    out[path[0]] = go(&forms[path[0]], &path[1..], new);
    out
}

/// Smaller things to put where `x` is: its operands, then constants.
fn replacements(x: &Sx) -> Vec<Sx> {
    let mut out = Vec::new();
    if let Sx::List(items) = x {
        out.extend(items.iter().skip(1).cloned());
    }
    out.push(Sx::atom("1.0"));
    out.push(Sx::atom("p0"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sexpr::read;

    #[test]
    fn shrinks_to_the_failing_core() {
        let forms = read("(+ (* 2.0 (sin p0)) (let ((u (cos p0))) (- u (log (+ 1.0 (* p0 p0))))))")
            .expect("read");
        // "Fails" whenever a `log` is present.
        let small = minimize(&forms, |src| src.contains("(log"));
        let text = crate::sexpr::program_text(&small);
        assert!(text.contains("(log"));
        assert!(text.len() < 20, "{text}");
    }
}
