//! The decoder: core forms to a [`Program`] (flat post-order nodes, lexical addresses).
//!
//! Names are resolved once, here: every variable becomes a frame address `(depth, slot)`, a
//! top-level slot, a host input or a base primitive, and a call whose head is an unshadowed base
//! primitive becomes a direct [`Node::PrimCall`]. Frames are flat: one per lambda invocation,
//! holding its parameters and every `let`/`letrec*` variable of its body, so `let` allocates
//! nothing at run time. Tail positions are marked on calls.

use super::core::{CoreId, CoreKind, Expanded, TopForm};
use super::scope::Scope;
use super::symbols::Sym;
use crate::error::{Error, ErrorKind, Result, Span};
use crate::extension::Registry;
use crate::prims::{self, Prim};
use crate::program::{LambdaInfo, Node, NodeId, Program};
use std::sync::Arc;

#[derive(Clone, Copy, Debug)]
enum Binding {
    Local { level: u32, slot: u32 },
    Global(u32),
}

struct Frame {
    next_slot: u32,
}

struct Decoder<'a> {
    ex: &'a Expanded,
    inputs: Vec<Sym>,
    input_names: Vec<String>,
    primitives: &'a Registry,
    scope: Scope<Sym, Binding>,
    frames: Vec<Frame>,
    p: ProgramParts,
}

#[derive(Default)]
struct ProgramParts {
    nodes: Vec<Node>,
    spans: Vec<Span>,
    kids: Vec<NodeId>,
    lambdas: Vec<LambdaInfo>,
}

/// Decodes an expanded program against the host input names.
pub fn decode(
    mut ex: Expanded,
    source: Arc<str>,
    inputs: &[&str],
    primitives: &Registry,
) -> Result<Program> {
    let input_syms: Vec<Sym> = inputs.iter().map(|n| ex.data.symbols.intern(n)).collect();
    let mut d = Decoder {
        ex: &ex,
        inputs: input_syms,
        input_names: inputs.iter().map(|s| s.to_string()).collect(),
        primitives,
        scope: Scope::default(),
        frames: vec![Frame { next_slot: 0 }],
        p: ProgramParts::default(),
    };
    // Every top-level definition is in scope in the whole program (letrec* semantics).
    for form in &ex.top {
        if let TopForm::Define(b) = form {
            let slot = d.frames[0].next_slot;
            d.frames[0].next_slot += 1;
            d.scope.push((b.name, Binding::Global(slot)));
        }
    }
    let mut forms = Vec::with_capacity(ex.top.len());
    let mut global = 0;
    let n = ex.top.len();
    for (k, form) in ex.top.iter().enumerate() {
        match *form {
            TopForm::Define(b) => {
                let init = d.expr(b.init, false)?;
                forms.push(d.push(Node::Define { slot: global, init }, b.span));
                global += 1;
            }
            TopForm::Expr(e) => forms.push(d.expr(e, k + 1 == n)?),
        }
    }
    let (start, len) = d.kid_list(&forms);
    let span = Span::new(0, source.len() as u32);
    let root = d.push(Node::Top { start, len }, span);
    let top_frame = d.frames[0].next_slot;
    let parts = std::mem::take(&mut d.p);
    let input_names = std::mem::take(&mut d.input_names);
    Ok(Program {
        source,
        nodes: parts.nodes,
        spans: parts.spans,
        kids: parts.kids,
        lambdas: parts.lambdas,
        inputs: input_names,
        top_frame,
        data: std::mem::take(&mut ex.data),
        root,
        primitives: primitives.clone(),
    })
}

/// Longest unbound name (bytes) that gets a "did you mean" (a distance costs the product of the
/// two names' lengths: a 64k-character name once took 20 s).
const HINT_LONGEST: usize = 64;
/// Most names a "did you mean" compares against (a scope of 200,000 defines is possible).
const HINT_NAMES: usize = 4096;

impl Decoder<'_> {
    fn push(&mut self, node: Node, span: Span) -> NodeId {
        self.p.nodes.push(node);
        self.p.spans.push(span);
        (self.p.nodes.len() - 1) as NodeId
    }

    fn kid_list(&mut self, ids: &[NodeId]) -> (u32, u32) {
        let start = self.p.kids.len() as u32;
        self.p.kids.extend_from_slice(ids);
        (start, ids.len() as u32)
    }

    fn level(&self) -> u32 {
        (self.frames.len() - 1) as u32
    }

    fn alloc_slot(&mut self) -> u32 {
        self.frames.last_mut().map_or(0, |f| {
            f.next_slot += 1;
            f.next_slot - 1
        })
    }

    fn name(&self, s: Sym) -> &str {
        self.ex.data.symbols.name(s)
    }

    fn resolve(&mut self, s: Sym, span: Span) -> Result<Node> {
        if let Some(b) = self.scope.find(&s) {
            return Ok(match b {
                Binding::Local { level, slot } => Node::Local {
                    depth: self.level() - level,
                    slot,
                    name: s,
                },
                Binding::Global(slot) => Node::Global { slot, name: s },
            });
        }
        if let Some(i) = self.inputs.iter().position(|&n| n == s) {
            return Ok(Node::Input(i as u32));
        }
        let name = self.name(s);
        if let Some(p) = Prim::from_name(name) {
            return Ok(Node::Base(p));
        }
        if let Some(i) = self.primitives.find(name) {
            return Ok(Node::Ext(i as u32));
        }
        let msg = match prims::unsupported(name) {
            Some(why) => format!("`{name}` {why}"),
            None => format!("unbound variable `{name}`{}", self.unbound_hint(name)),
        };
        Err(Error::new(ErrorKind::Unbound, msg, span))
    }

    /// For an unbound `name` (at most [`HINT_LONGEST`] bytes long; at most [`HINT_NAMES`] names
    /// compared, innermost first): what other languages call it ([`ALIASES`]), or the closest name
    /// it could have meant (a variable in scope, an input, a primitive; one that differs only in
    /// case first), and the program's inputs.
    fn unbound_hint(&self, name: &str) -> String {
        let scope = self.scope.iter().rev().map(|(s, _)| self.name(*s));
        let known = scope
            .chain(self.input_names.iter().map(String::as_str))
            .chain(Prim::ALL.iter().map(|p| p.name()))
            .chain(
                (0..self.primitives.len()).filter_map(|i| self.primitives.get(i).map(|p| p.name())),
            );
        let limit = (name.chars().count() / 3).max(1);
        let known: Vec<&str> = known.filter(|k| *k != name).collect();
        let lower = name.to_lowercase();
        let same_but_case = known.iter().find(|k| k.to_lowercase() == lower);
        let alias = ALIASES.iter().find(|(alias, _)| *alias == name);
        let closest = match (same_but_case, alias) {
            (Some(k), _) => format!("; did you mean `{k}`?"),
            (None, Some((_, advice))) => format!("; {advice}"),
            // The distance costs the product of the two lengths: a name nobody would type gets
            // no suggestion, and only names whose length is within reach are compared.
            (None, None) if name.len() > HINT_LONGEST => String::new(),
            (None, None) => {
                let len = name.chars().count();
                known
                    .iter()
                    .filter(|k| k.len() <= 4 * HINT_LONGEST)
                    .filter(|k| k.chars().count().abs_diff(len) <= limit)
                    .take(HINT_NAMES)
                    .map(|k| (strsim::damerau_levenshtein(name, k), k))
                    .filter(|(d, _)| *d <= limit)
                    .min_by_key(|(d, _)| *d)
                    .map(|(_, k)| format!("; did you mean `{k}`?"))
                    .unwrap_or_default()
            }
        };
        let inputs = if self.input_names.is_empty() {
            " (the program has no inputs)".to_string()
        } else {
            format!(" (inputs: {})", self.input_names.join(", "))
        };
        format!("{closest}{inputs}")
    }

    fn expr(&mut self, id: CoreId, tail: bool) -> Result<NodeId> {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.expr_inner(id, tail))
    }

    fn expr_inner(&mut self, id: CoreId, tail: bool) -> Result<NodeId> {
        let core = *self.ex.node(id);
        let span = core.span;
        let node = match core.kind {
            CoreKind::Num(l) => Node::Num(l),
            CoreKind::Bool(b) => Node::Bool(b),
            CoreKind::Quote(d) => Node::Quote(d),
            CoreKind::Var(s) => self.resolve(s, span)?,
            CoreKind::If { test, then, els } => {
                let test = self.expr(test, false)?;
                let then = self.expr(then, tail)?;
                let els = self.expr(els, tail)?;
                Node::If { test, then, els }
            }
            CoreKind::Lambda { params, body } => {
                let params = params.slice(&self.ex.syms).to_vec();
                self.frames.push(Frame {
                    next_slot: params.len() as u32,
                });
                let level = self.level();
                let mark = self.scope.len();
                for (i, &(p, _)) in params.iter().enumerate() {
                    self.scope.push((
                        p,
                        Binding::Local {
                            level,
                            slot: i as u32,
                        },
                    ));
                }
                let body = self.expr(body, true);
                self.scope.truncate(mark);
                let frame = self.frames.pop().map_or(0, |f| f.next_slot);
                let body = body?;
                self.p.lambdas.push(LambdaInfo {
                    params: params.len() as u32,
                    frame_size: frame,
                    body,
                });
                Node::Lambda((self.p.lambdas.len() - 1) as u32)
            }
            CoreKind::Let { binds, body } | CoreKind::Letrec { binds, body } => {
                let rec = matches!(core.kind, CoreKind::Letrec { .. });
                let binds = binds.slice(&self.ex.binds).to_vec();
                let level = self.level();
                let first = self.frames.last().map_or(0, |f| f.next_slot);
                for _ in &binds {
                    self.alloc_slot();
                }
                let mark = self.scope.len();
                let bind_all = |d: &mut Self| {
                    for (i, b) in binds.iter().enumerate() {
                        d.scope.push((
                            b.name,
                            Binding::Local {
                                level,
                                slot: first + i as u32,
                            },
                        ));
                    }
                };
                if rec {
                    bind_all(self);
                }
                let mut inits = Vec::with_capacity(binds.len());
                for b in &binds {
                    match self.expr(b.init, false) {
                        Ok(n) => inits.push(n),
                        Err(e) => {
                            self.scope.truncate(mark);
                            return Err(e);
                        }
                    }
                }
                if !rec {
                    bind_all(self);
                }
                let body = self.expr(body, tail);
                self.scope.truncate(mark);
                let body = body?;
                let (start, len) = self.kid_list(&inits);
                Node::Bind {
                    first,
                    start,
                    len,
                    body,
                }
            }
            CoreKind::Begin { items } => {
                let items = items.slice(&self.ex.ids).to_vec();
                let n = items.len();
                let mut out = Vec::with_capacity(n);
                for (k, e) in items.into_iter().enumerate() {
                    out.push(self.expr(e, tail && k + 1 == n)?);
                }
                let (start, len) = self.kid_list(&out);
                Node::Seq { start, len }
            }
            CoreKind::Call { head, args } => {
                let args = args.slice(&self.ex.ids).to_vec();
                let h = self.expr(head, false)?;
                let mut out = Vec::with_capacity(args.len() + 1);
                let direct = match self.p.nodes[h as usize] {
                    Node::Base(p) => Some(p),
                    _ => None,
                };
                if direct.is_none() {
                    out.push(h);
                }
                for a in args {
                    out.push(self.expr(a, false)?);
                }
                let (start, len) = self.kid_list(&out);
                match direct {
                    Some(prim) => Node::PrimCall {
                        prim,
                        start,
                        len,
                        tail,
                    },
                    None => Node::Call { start, len, tail },
                }
            }
        };
        Ok(self.push(node, span))
    }
}

/// Names other languages give primitives, with what to write here instead.
const ALIASES: &[(&str, &str)] = &[
    ("ln", "the natural logarithm is `log`"),
    ("log10", "write `(/ (log x) (log 10))`"),
    ("log2", "write `(/ (log x) (log 2))`"),
    ("power", "a power is `pow` (or `expt`)"),
    ("**", "a power is `pow` (or `expt`)"),
    ("^", "a power is `pow` (or `expt`)"),
    ("sqr", "a square is `square` (`sqrt` is the square root)"),
    ("pi", "write the number: 3.141592653589793"),
    ("e", "write `(exp 1)`"),
];

#[cfg(test)]
mod tests {
    use crate::program::{Node, Program};

    #[test]
    fn post_order_and_addresses() {
        let p = Program::new(
            "(define (f x) (let ((y x)) (lambda () (+ x y)))) ((f a))",
            &["a"],
        )
        .expect("decodes");
        for (i, n) in p.nodes.iter().enumerate() {
            let kids: Vec<u32> = match *n {
                Node::If { test, then, els } => vec![test, then, els],
                Node::Bind {
                    start, len, body, ..
                } => p.kids(start, len).iter().copied().chain([body]).collect(),
                Node::Seq { start, len }
                | Node::Call { start, len, .. }
                | Node::Top { start, len } => p.kids(start, len).to_vec(),
                Node::PrimCall { start, len, .. } => p.kids(start, len).to_vec(),
                Node::Define { init, .. } => vec![init],
                _ => vec![],
            };
            assert!(
                kids.iter().all(|&k| (k as usize) < i),
                "node {i} is not post-order"
            );
        }
        assert_eq!(p.root as usize, p.nodes.len() - 1);
        // x is the lambda's parent frame slot 0, y slot 1 of the same frame.
        assert!(p.nodes.iter().any(|n| matches!(
            n,
            Node::Local {
                depth: 1,
                slot: 0,
                ..
            }
        )));
        assert!(p.nodes.iter().any(|n| matches!(
            n,
            Node::Local {
                depth: 1,
                slot: 1,
                ..
            }
        )));
        assert!(p.nodes.iter().any(|n| matches!(n, Node::PrimCall { .. })));
        assert_eq!(
            p.lambdas.iter().map(|l| l.frame_size).collect::<Vec<_>>(),
            vec![0, 2]
        );
    }

    /// An unbound name of 64k characters beside a defined one of the same length gets its
    /// error and no suggestion (comparing them cost 20 s); a typo still gets one.
    #[test]
    fn a_huge_unbound_name_gets_no_suggestion_and_a_typo_does() {
        let long = "v".repeat(65_536);
        let other = format!("{}w", "v".repeat(65_535));
        let src = format!("(define {other} 1) {long}");
        let e = Program::new(&src, &[]).expect_err("unbound");
        assert!(e.message.contains("unbound"), "{}", &e.message[..200]);
        assert!(!e.message.contains("did you mean"));
        assert!(e.message.len() < 66_000 + 200, "{}", e.message.len());
        let e = Program::new("(define rate 1) (* rat 2)", &[]).expect_err("unbound");
        assert!(e.message.contains("did you mean `rate`?"), "{}", e.message);
        // Many names in scope: the innermost of reachable length are compared.
        let defines: String = (0..20_000).map(|i| format!("(define n{i} {i}) ")).collect();
        let src = format!("{defines} (define zeta 1) zetq");
        let e = Program::new(&src, &[]).expect_err("unbound");
        assert!(
            e.message.contains("did you mean `zeta`?"),
            "{}",
            &e.message[..200]
        );
    }

    #[test]
    fn shadowed_primitive_is_a_plain_call() {
        let p = Program::new("(let ((+ *)) (+ 2 3))", &[]).expect("decodes");
        assert!(!p.nodes.iter().any(|n| matches!(n, Node::PrimCall { .. })));
        let e = Program::new("(set! x 1)", &[]).expect_err("unbound");
        assert!(e.message.contains("not supported"), "{}", e.message);
    }

    /// The message of the error `src` fails with.
    fn message(src: &str, inputs: &[&str]) -> String {
        Program::new(src, inputs)
            .expect_err("unbound")
            .message
            .clone()
    }

    #[test]
    fn a_name_differing_in_case_comes_first_and_other_languages_names_are_translated() {
        // `a` is as close as `S` by edit distance; the case-insensitive match wins.
        assert_eq!(
            message("(* a s)", &["a", "S"]),
            "unbound variable `s`; did you mean `S`? (inputs: a, S)"
        );
        assert_eq!(
            message("(ln x)", &["x"]),
            "unbound variable `ln`; the natural logarithm is `log` (inputs: x)"
        );
        assert_eq!(
            message("(sqr x)", &["x"]),
            "unbound variable `sqr`; a square is `square` (`sqrt` is the square root) (inputs: x)"
        );
        assert!(message("(log10 x)", &["x"]).contains("(/ (log x) (log 10))"));
        // A real name differing in case beats another language's meaning of the word.
        assert_eq!(
            message("(* e x)", &["E", "x"]),
            "unbound variable `e`; did you mean `E`? (inputs: E, x)"
        );
        assert_eq!(
            message("(* e x)", &["x"]),
            "unbound variable `e`; write `(exp 1)` (inputs: x)"
        );
    }

    #[test]
    fn an_unbound_variable_suggests_the_closest_name_and_lists_the_inputs() {
        assert_eq!(
            message("(* alpah x)", &["alpha", "x"]),
            "unbound variable `alpah`; did you mean `alpha`? (inputs: alpha, x)"
        );
        assert_eq!(
            message("(let ((rate 2)) (* rtae 3))", &[]),
            "unbound variable `rtae`; did you mean `rate`? (the program has no inputs)"
        );
        assert_eq!(
            message("(expp 1)", &["t"]),
            "unbound variable `expp`; did you mean `exp`? (inputs: t)"
        );
        assert_eq!(
            message("(* zeta 2)", &["t"]),
            "unbound variable `zeta` (inputs: t)"
        );
    }
}
