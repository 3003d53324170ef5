//! Templates: a model program with named holes, `(hole name (x y))`, that a search fills.
//!
//! A scientist often knows most of a model — an integrator, a conservation law, a known term —
//! and needs a search for the rest. The template is that model written once, with a hole where
//! each unknown part goes; the hole declares the variables its filling may read. A search's
//! proposers fill every hole with an expression; the filled program is calibrated as any
//! candidate. A candidate that fills a template is written
//!
//! ```text
//! (holes E1 E2 …)
//! ```
//!
//! one expression per hole, in the order the holes appear in the template: the form every
//! proposer speaks (`Evolve`, a stream line, a `Command` proposer, a plugin). A filling may read
//! its hole's variables and the candidate's parameters, nothing else; an expression reading a
//! name its hole does not declare is refused, with its place.
//!
//! ```
//! use ndvm_systems::population::template::Template;
//!
//! let t = Template::parse("(define (rhs t x y) [(hole dx (x y)) (hole dy (x y))])").unwrap();
//! assert_eq!(t.holes()[1].name, "dy");
//! let program = t.fill("(holes (* a x) (- (* b x y) y))", &["a".into(), "b".into()]).unwrap();
//! assert_eq!(program, "(define (rhs t x y) [(* a x) (- (* b x y) y)])");
//! let refused = t.fill("(holes (* a t) y)", &["a".into()]).unwrap_err();
//! assert!(refused.contains("hole `dx` reads `t`"), "{refused}");
//! ```

use ndvm_components::scene::{self, Scene};
use ndvm_engine::error::Span;
use ndvm_engine::syntax::reader::{self, Data, DatumId, DatumKind};

/// The head of a hole in a template.
pub const HOLE: &str = "hole";
/// The head of a filling: `(holes E1 E2 …)`.
pub const FILL: &str = "holes";
/// Most holes in a template.
pub const MAX_HOLES: usize = 64;

/// One hole: its name and the variables a filling may read.
#[derive(Clone, Debug, PartialEq)]
pub struct Hole {
    pub name: String,
    pub vars: Vec<String>,
    /// Its place in the template's text (bytes).
    span: (usize, usize),
}

/// A parsed template.
#[derive(Clone, Debug, PartialEq)]
pub struct Template {
    src: String,
    holes: Vec<Hole>,
    /// Every symbol the template mentions outside its holes.
    names: Vec<String>,
}

impl Template {
    /// Reads `src` and finds its holes. Errors say where: `line 2, column 9: …`.
    pub fn parse(src: &str) -> Result<Template, String> {
        let data =
            reader::read(src).map_err(|e| located(src, e.span.unwrap_or_default(), &e.message))?;
        let mut holes = Vec::new();
        let mut names = Vec::new();
        let mut stack: Vec<DatumId> = data.top.iter().rev().copied().collect();
        while let Some(id) = stack.pop() {
            match data.get(id).kind {
                DatumKind::Sym(s) => {
                    let name = data.symbols.name(s);
                    if name == FILL {
                        return Err(located(
                            src,
                            data.get(id).span,
                            "`holes` is a filling's head: a template writes each hole `(hole name (x y))`",
                        ));
                    }
                    if !names.iter().any(|n| n == name) {
                        names.push(name.to_string());
                    }
                }
                DatumKind::List { .. } if head(&data, id) == Some(HOLE) => {
                    let hole = read_hole(src, &data, id)?;
                    if holes.iter().any(|h: &Hole| h.name == hole.name) {
                        return Err(located(
                            src,
                            data.get(id).span,
                            &format!("the hole `{}` is named twice", hole.name),
                        ));
                    }
                    holes.push(hole);
                    if holes.len() > MAX_HOLES {
                        return Err(located(
                            src,
                            data.get(id).span,
                            &format!("more than {MAX_HOLES} holes"),
                        ));
                    }
                }
                DatumKind::List { .. } => stack.extend(data.list(id).iter().rev()),
                _ => {}
            }
        }
        Ok(Template {
            src: src.to_string(),
            holes,
            names,
        })
    }

    /// The template of a search over trajectories with `states`: a right-hand side with one
    /// hole per state, named `d<state>/dt`, reading every state.
    pub fn for_trajectories(states: &[String]) -> Template {
        let vars = states.join(" ");
        let holes: Vec<String> = states
            .iter()
            .map(|s| format!("(hole d{s}/dt ({vars}))"))
            .collect();
        let src = format!("(define (rhs t {vars}) [{}])", holes.join(" "));
        Template::parse(&src).unwrap_or_else(|_| Template {
            src,
            holes: Vec::new(),
            names: Vec::new(),
        })
    }

    /// A search scene's template: its `template`, else for trajectories one hole per state,
    /// hidden ones included ([`Template::for_trajectories`]); `None` for other searches.
    pub fn of_scene(scene: &Scene) -> Result<Option<Template>, String> {
        let given = scene.search.as_ref().and_then(|s| s.template.as_deref());
        match (given, &scene.data) {
            (Some(src), _) => Template::parse(src)
                .map(Some)
                .map_err(|e| format!("`template`, {e}")),
            (None, Some(scene::Data::Trajectory { states, hidden, .. }))
                if scene.search.is_some() =>
            {
                let mut all = states.clone();
                all.extend(hidden.iter().map(|h| h.name.clone()));
                Ok(Some(Template::for_trajectories(&all)))
            }
            _ => Ok(None),
        }
    }

    /// The names of its holes, in order.
    pub fn names(&self) -> Vec<String> {
        self.holes.iter().map(|h| h.name.clone()).collect()
    }

    pub fn holes(&self) -> &[Hole] {
        &self.holes
    }

    pub fn text(&self) -> &str {
        &self.src
    }

    /// Whether the template mentions `name` outside its holes (a parameter of the known part,
    /// a name no filling's parameter may take).
    pub fn mentions(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
    }

    /// The program `fill` (`(holes E1 E2 …)`) makes of the template, each hole replaced by its
    /// expression. Refused, with the reason: a filling of another shape or count, or an
    /// expression that reads a name other than its hole's variables and `params`.
    pub fn fill(&self, fill: &str, params: &[String]) -> Result<String, String> {
        let parts = self.parts(fill)?;
        let mut out = String::with_capacity(self.src.len() + fill.len());
        let mut at = 0;
        let mut order: Vec<(usize, &Hole)> = self.holes.iter().enumerate().collect();
        order.sort_by_key(|(_, h)| h.span.0);
        for (i, hole) in order {
            out.push_str(&self.src[at..hole.span.0]);
            out.push_str(&parts[i].text);
            at = hole.span.1;
            if let Some(name) = parts[i]
                .names
                .iter()
                .find(|n| !hole.vars.contains(n) && !params.contains(n))
            {
                let may = if hole.vars.is_empty() {
                    "no variables".to_string()
                } else {
                    hole.vars.join(", ")
                };
                return Err(format!(
                    "hole `{}` reads `{name}`, which it does not declare (it may read {may} and \
                     the candidate's parameters)",
                    hole.name
                ));
            }
        }
        out.push_str(&self.src[at..]);
        Ok(out)
    }

    /// Each hole's expression in `fill`, as text, in the template's order.
    pub fn expressions(&self, fill: &str) -> Result<Vec<String>, String> {
        Ok(self.parts(fill)?.into_iter().map(|p| p.text).collect())
    }

    fn parts(&self, fill: &str) -> Result<Vec<Part>, String> {
        let data = reader::read(fill)
            .map_err(|e| located(fill, e.span.unwrap_or_default(), &e.message))?;
        let n = self.holes.len();
        let shape = || {
            format!(
                "a filling of this template is `({FILL} E1 … E{n})`, one expression for each of \
                 its {n} holes ({})",
                self.holes
                    .iter()
                    .map(|h| h.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let [top] = data.top[..] else {
            return Err(shape());
        };
        if head(&data, top) != Some(FILL) || data.list(top).len() != n + 1 {
            return Err(shape());
        }
        Ok(data.list(top)[1..]
            .iter()
            .map(|&e| {
                let span = data.get(e).span;
                Part {
                    text: fill[span.start as usize..span.end as usize].to_string(),
                    names: read_names(&data, e),
                }
            })
            .collect())
    }
}

/// A hole's expression in a filling: its text and the names it reads.
struct Part {
    text: String,
    names: Vec<String>,
}

/// The names an expression reads: its symbols that are not an operator (a list's head).
fn read_names(data: &Data, root: DatumId) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut stack = vec![(root, false)];
    while let Some((id, is_head)) = stack.pop() {
        match data.get(id).kind {
            DatumKind::Sym(s) if !is_head => {
                let name = data.symbols.name(s);
                if !out.iter().any(|n| n == name) {
                    out.push(name.to_string());
                }
            }
            DatumKind::List { .. } => {
                let items = data.list(id);
                stack.extend(items.iter().enumerate().rev().map(|(i, &k)| (k, i == 0)));
            }
            _ => {}
        }
    }
    out
}

/// The head symbol of list `id`, if it is one.
fn head(data: &Data, id: DatumId) -> Option<&str> {
    if !data.is_list(id) {
        return None;
    }
    let first = *data.list(id).first()?;
    data.sym(first).map(|s| data.symbols.name(s))
}

/// A `(hole name (vars…))` form.
fn read_hole(src: &str, data: &Data, id: DatumId) -> Result<Hole, String> {
    let span = data.get(id).span;
    let bad = || {
        located(
            src,
            span,
            "a hole is `(hole name (x y …))`: a name and the list of variables it may read",
        )
    };
    let items = data.list(id);
    let [_, name, vars] = items[..] else {
        return Err(bad());
    };
    let name = data.sym(name).ok_or_else(bad)?;
    if !data.is_list(vars) {
        return Err(bad());
    }
    let vars = data
        .list(vars)
        .iter()
        .map(|&v| data.sym(v).map(|s| data.symbols.name(s).to_string()))
        .collect::<Option<Vec<String>>>()
        .ok_or_else(bad)?;
    Ok(Hole {
        name: data.symbols.name(name).to_string(),
        vars,
        span: (span.start as usize, span.end as usize),
    })
}

/// `message` at `span`'s line and column in `src`.
fn located(src: &str, span: Span, message: &str) -> String {
    let (line, column) = span.line_col(src);
    format!("line {line}, column {column}: {message}")
}

/// Where `src` has a hole (line, column), if it has one: a program with holes is a template,
/// which only a search fills.
pub fn first_hole(src: &str) -> Option<(usize, usize)> {
    let data = reader::read(src).ok()?;
    let mut stack: Vec<DatumId> = data.top.iter().rev().copied().collect();
    while let Some(id) = stack.pop() {
        if head(&data, id) == Some(HOLE) {
            return Some(data.get(id).span.line_col(src));
        }
        if data.is_list(id) {
            stack.extend(data.list(id).iter().rev().copied());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_template_is_filled_in_the_order_of_its_holes() {
        let t = Template::parse("(+ k (hole f (x)) (* 2 (hole g (x z))))").expect("accepted");
        assert_eq!(t.holes().len(), 2);
        assert_eq!(t.holes()[1].vars, p(&["x", "z"]));
        assert!(t.mentions("k") && !t.mentions("z"));
        let out = t
            .fill("(holes (sin x) (/ z a))", &p(&["a"]))
            .expect("accepted");
        assert_eq!(out, "(+ k (sin x) (* 2 (/ z a)))");
        assert_eq!(
            t.expressions("(holes x z)").expect("accepted"),
            p(&["x", "z"])
        );
    }

    #[test]
    fn malformed_holes_and_fillings_are_refused_with_their_place() {
        let e = Template::parse("(+ 1\n   (hole f x))").expect_err("refused");
        assert!(e.starts_with("line 2, column 4: a hole is"), "{e}");
        let e = Template::parse("(+ (hole f (x)) (hole f (x)))").expect_err("refused");
        assert!(e.contains("`f` is named twice"), "{e}");
        let e = Template::parse("(+ (hole f (x 1)) 2)").expect_err("refused");
        assert!(e.contains("a hole is"), "{e}");
        let t = Template::parse("(+ (hole f (x)) (hole g (x)))").expect("accepted");
        for bad in [
            "(holes x)",
            "(x x)",
            "(holes x x) (holes x x)",
            "(holes x x x)",
        ] {
            let e = t.fill(bad, &[]).expect_err("refused");
            assert!(
                e.contains("one expression for each of its 2 holes (f, g)"),
                "{bad}: {e}"
            );
        }
        let e = t.fill("(holes (+ x", &[]).expect_err("refused");
        assert!(e.starts_with("line 1, column"), "{e}");
        let e = t
            .fill("(holes x (* b y))", &p(&["b"]))
            .expect_err("refused");
        assert!(e.contains("hole `g` reads `y`"), "{e}");
    }

    #[test]
    fn a_search_over_trajectories_has_one_hole_per_state() {
        let t = Template::for_trajectories(&p(&["prey", "predator"]));
        assert_eq!(
            t.text(),
            "(define (rhs t prey predator) [(hole dprey/dt (prey predator)) \
             (hole dpredator/dt (prey predator))])"
        );
        assert_eq!(t.holes()[0].name, "dprey/dt");
        assert_eq!(first_hole(t.text()), Some((1, 32)));
        assert_eq!(first_hole("(+ x hole)"), None);
    }
}
