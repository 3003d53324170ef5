//! The expander: derived forms to core forms (docs/language-reference.md §4–§5).
//!
//! `let*`, `cond`, `when`, `unless`, `and`, `or` and `loop`/`recur` are rewritten exactly as §5.1
//! and §5.2 state; bodies with leading definitions become `letrec*`. Names the expander introduces
//! contain a space, which no program symbol can, so they can neither capture nor be captured.
//! Every malformed special form and every misplaced keyword is a located syntax error here,
//! before evaluation.

use super::core::{Bind, Core, CoreId, CoreKind, Expanded, Range, TopForm};
use super::reader::{Data, DatumId, DatumKind};
use super::symbols::Sym;
use crate::error::{Error, ErrorKind, Result, Span};
use std::collections::HashSet;

/// The 18 keywords of docs/language-reference.md §4.
pub const KEYWORDS: [&str; 18] = [
    "quote", "if", "define", "lambda", "begin", "let", "let*", "letrec", "letrec*", "cond", "else",
    "=>", "and", "or", "when", "unless", "loop", "recur",
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kw {
    Quote,
    If,
    Define,
    Lambda,
    Begin,
    Let,
    LetStar,
    Letrec,
    LetrecStar,
    Cond,
    Else,
    Arrow,
    And,
    Or,
    When,
    Unless,
    Loop,
    Recur,
}

const KW_LIST: [Kw; 18] = [
    Kw::Quote,
    Kw::If,
    Kw::Define,
    Kw::Lambda,
    Kw::Begin,
    Kw::Let,
    Kw::LetStar,
    Kw::Letrec,
    Kw::LetrecStar,
    Kw::Cond,
    Kw::Else,
    Kw::Arrow,
    Kw::And,
    Kw::Or,
    Kw::When,
    Kw::Unless,
    Kw::Loop,
    Kw::Recur,
];

/// Where `recur` may appear: the loop's self name and its variable count, only in tail position.
#[derive(Clone, Copy)]
struct Ctx {
    recur: Option<(Sym, usize)>,
}

const NON_TAIL: Ctx = Ctx { recur: None };

struct Expander {
    out: Expanded,
    kw: Vec<Option<Kw>>,
    fresh: u32,
    /// Levels the enclosing `and`, `or`, `cond` and `let*` forms add once expanded (each of
    /// their operands nests one level deeper than the one before).
    chained: usize,
}

/// The most levels `and`, `or`, `cond` and `let*` forms may add, all enclosing ones together:
/// a flat 60 MB `(and 1 1 …)` expands 30 million levels deep, and every later phase that walks
/// the tree pays for each level (about 500 bytes; it once took 14 GB and aborted).
pub const MAX_CHAINED: usize = 100_000;

/// Expands every top-level form of `data`.
pub fn expand(data: Data) -> Result<Expanded> {
    let mut ex = Expander {
        out: Expanded {
            data,
            ..Expanded::default()
        },
        kw: Vec::new(),
        fresh: 0,
        chained: 0,
    };
    for (name, kw) in KEYWORDS.iter().zip(KW_LIST) {
        let s = ex.out.data.symbols.intern_static(name);
        if ex.kw.len() <= s.0 as usize {
            ex.kw.resize(s.0 as usize + 1, None);
        }
        ex.kw[s.0 as usize] = Some(kw);
    }
    let top = ex.out.data.top.clone();
    if top.is_empty() {
        return Err(Error::syntax("empty program", Span::new(0, 0)));
    }
    let mut seen: HashSet<Sym> = HashSet::new();
    for &d in &top {
        if let Some((name, init, span)) = ex.definition(d)? {
            if !seen.insert(name) {
                return Err(Error::syntax(
                    format!("`{}` is defined twice at top level", ex.name(name)),
                    span,
                ));
            }
            ex.out.top.push(TopForm::Define(Bind { name, init, span }));
        } else {
            let e = ex.expr(d, NON_TAIL)?;
            ex.out.top.push(TopForm::Expr(e));
        }
    }
    if let Some(&last) = top.last()
        && matches!(ex.out.top.last(), Some(TopForm::Define(_)))
    {
        return Err(Error::syntax(
            "no result expression: the last form is a definition",
            ex.span(last),
        ));
    }
    Ok(ex.out)
}

impl Expander {
    fn span(&self, d: DatumId) -> Span {
        self.out.data.get(d).span
    }

    fn name(&self, s: Sym) -> &str {
        self.out.data.symbols.name(s)
    }

    fn keyword(&self, d: DatumId) -> Option<Kw> {
        self.out
            .data
            .sym(d)
            .and_then(|s| self.kw.get(s.0 as usize).copied().flatten())
    }

    fn push(&mut self, kind: CoreKind, span: Span) -> CoreId {
        self.out.nodes.push(Core { kind, span });
        (self.out.nodes.len() - 1) as CoreId
    }

    fn ids(&mut self, ids: &[CoreId]) -> Range {
        let start = self.out.ids.len() as u32;
        self.out.ids.extend_from_slice(ids);
        Range {
            start,
            len: ids.len() as u32,
        }
    }

    fn binds(&mut self, binds: &[Bind]) -> Range {
        let start = self.out.binds.len() as u32;
        self.out.binds.extend_from_slice(binds);
        Range {
            start,
            len: binds.len() as u32,
        }
    }

    fn gensym(&mut self, base: &str) -> Sym {
        self.fresh += 1;
        let name = format!(" {base}{}", self.fresh);
        self.out.data.symbols.intern(&name)
    }

    /// A name in a binding position: a symbol that is not a keyword.
    fn binder(&self, d: DatumId, what: &str) -> Result<Sym> {
        match self.out.data.sym(d) {
            Some(s) if self.keyword(d).is_some() => Err(Error::syntax(
                format!("`{}` is a keyword and cannot be bound", self.name(s)),
                self.span(d),
            )),
            Some(s) => Ok(s),
            None => Err(Error::syntax(
                format!("{what} must be a name"),
                self.span(d),
            )),
        }
    }

    /// If `d` is `(define …)`, its name, expanded initializer and span.
    fn definition(&mut self, d: DatumId) -> Result<Option<(Sym, CoreId, Span)>> {
        let items = self.out.data.list(d).to_vec();
        if items.is_empty() || self.keyword(items[0]) != Some(Kw::Define) {
            return Ok(None);
        }
        let span = self.span(d);
        if items.len() < 3 {
            return Err(Error::syntax("`define` needs a name and a value", span));
        }
        if self.out.data.is_list(items[1]) {
            // (define (name p…) body…)
            let head = self.out.data.list(items[1]).to_vec();
            let Some((&fname, params)) = head.split_first() else {
                return Err(Error::syntax(
                    "`define` needs a function name",
                    self.span(items[1]),
                ));
            };
            let name = self.binder(fname, "a defined function's name")?;
            let lambda = self.lambda(params, &items[2..], span)?;
            return Ok(Some((name, lambda, self.span(fname))));
        }
        let name = self.binder(items[1], "a defined name")?;
        if items.len() != 3 {
            return Err(Error::syntax(
                "`(define name value)` takes exactly one value",
                span,
            ));
        }
        let init = self.expr(items[2], NON_TAIL)?;
        Ok(Some((name, init, self.span(items[1]))))
    }

    fn lambda(&mut self, params: &[DatumId], body: &[DatumId], span: Span) -> Result<CoreId> {
        let mut names: Vec<(Sym, Span)> = Vec::with_capacity(params.len());
        let mut seen = HashSet::with_capacity(params.len());
        for &p in params {
            let s = self.binder(p, "a parameter")?;
            if !seen.insert(s) {
                return Err(Error::syntax(
                    format!("parameter `{}` is repeated", self.name(s)),
                    self.span(p),
                ));
            }
            names.push((s, self.span(p)));
        }
        let body = self.body(body, NON_TAIL, span)?;
        let start = self.out.syms.len() as u32;
        self.out.syms.extend_from_slice(&names);
        let params = Range {
            start,
            len: names.len() as u32,
        };
        Ok(self.push(CoreKind::Lambda { params, body }, span))
    }

    /// `definition* expression+`, as `letrec*` when there are definitions.
    fn body(&mut self, items: &[DatumId], ctx: Ctx, span: Span) -> Result<CoreId> {
        let mut defs: Vec<Bind> = Vec::new();
        let mut seen = HashSet::new();
        let mut i = 0;
        while i < items.len() {
            let Some((name, init, dspan)) = self.definition(items[i])? else {
                break;
            };
            if !seen.insert(name) {
                return Err(Error::syntax(
                    format!("`{}` is defined twice in one body", self.name(name)),
                    dspan,
                ));
            }
            defs.push(Bind {
                name,
                init,
                span: dspan,
            });
            i += 1;
        }
        let exprs = &items[i..];
        if exprs.is_empty() {
            return Err(Error::syntax("a body needs at least one expression", span));
        }
        let seq = self.sequence(exprs, ctx, span)?;
        if defs.is_empty() {
            return Ok(seq);
        }
        let binds = self.binds(&defs);
        Ok(self.push(CoreKind::Letrec { binds, body: seq }, span))
    }

    /// Expressions evaluated in order; the last in the context given.
    fn sequence(&mut self, exprs: &[DatumId], ctx: Ctx, span: Span) -> Result<CoreId> {
        let mut out = Vec::with_capacity(exprs.len());
        for (k, &e) in exprs.iter().enumerate() {
            if self.definition_head(e) {
                return Err(Error::syntax(
                    "a definition is only allowed at the start of a body or at top level",
                    self.span(e),
                ));
            }
            out.push(self.expr(e, if k + 1 == exprs.len() { ctx } else { NON_TAIL })?);
        }
        if out.len() == 1 {
            return Ok(out[0]);
        }
        let items = self.ids(&out);
        Ok(self.push(CoreKind::Begin { items }, span))
    }

    fn definition_head(&self, d: DatumId) -> bool {
        self.out
            .data
            .list(d)
            .first()
            .is_some_and(|&h| self.keyword(h) == Some(Kw::Define))
    }

    fn expr(&mut self, d: DatumId, ctx: Ctx) -> Result<CoreId> {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.expr_inner(d, ctx))
    }

    fn expr_inner(&mut self, d: DatumId, ctx: Ctx) -> Result<CoreId> {
        let datum = *self.out.data.get(d);
        let span = datum.span;
        match datum.kind {
            DatumKind::Num(l) => Ok(self.push(CoreKind::Num(l), span)),
            DatumKind::Bool(b) => Ok(self.push(CoreKind::Bool(b), span)),
            DatumKind::Sym(s) => {
                if self.keyword(d).is_some() {
                    return Err(Error::syntax(
                        format!(
                            "`{}` is a keyword and cannot be used as a variable",
                            self.name(s)
                        ),
                        span,
                    ));
                }
                Ok(self.push(CoreKind::Var(s), span))
            }
            DatumKind::List { .. } => {
                let items = self.out.data.list(d).to_vec();
                let Some(&head) = items.first() else {
                    return Err(Error::syntax(
                        "`()` is not an expression (quote it: '())",
                        span,
                    ));
                };
                match self.keyword(head) {
                    Some(kw) => self.special(kw, &items, ctx, span),
                    None => {
                        let h = self.expr(head, NON_TAIL)?;
                        let mut args = Vec::with_capacity(items.len() - 1);
                        for &a in &items[1..] {
                            args.push(self.expr(a, NON_TAIL)?);
                        }
                        let args = self.ids(&args);
                        Ok(self.push(CoreKind::Call { head: h, args }, span))
                    }
                }
            }
        }
    }

    fn special(&mut self, kw: Kw, items: &[DatumId], ctx: Ctx, span: Span) -> Result<CoreId> {
        let links = match kw {
            Kw::And | Kw::Or | Kw::Cond => items.len() - 1,
            Kw::LetStar => items.get(1).map_or(0, |&b| self.out.data.list(b).len()),
            _ => return self.special_form(kw, items, ctx, span),
        };
        if self.chained + links > MAX_CHAINED {
            let form = KEYWORDS[KW_LIST.iter().position(|&x| x == kw).unwrap_or(0)];
            return Err(Error::new(
                crate::error::ErrorKind::Limit,
                format!(
                    "this `{form}` ({links} {}, inside forms adding {} levels) would expand \
                     deeper than {MAX_CHAINED} levels: split it up",
                    match kw {
                        Kw::Cond => "clauses",
                        Kw::LetStar => "bindings",
                        _ => "operands",
                    },
                    self.chained
                ),
                span,
            ));
        }
        self.chained += links;
        let out = self.special_form(kw, items, ctx, span);
        self.chained -= links;
        out
    }

    fn special_form(&mut self, kw: Kw, items: &[DatumId], ctx: Ctx, span: Span) -> Result<CoreId> {
        let ops = &items[1..];
        let form = |k: Kw| KEYWORDS[KW_LIST.iter().position(|&x| x == k).unwrap_or(0)];
        let arity_err = |msg: &str| Err(Error::syntax(format!("`{}`: {msg}", form(kw)), span));
        match kw {
            Kw::Quote => {
                if ops.len() != 1 {
                    return arity_err("takes exactly one datum");
                }
                Ok(self.push(CoreKind::Quote(ops[0]), span))
            }
            Kw::If => {
                if ops.len() != 3 {
                    return arity_err(
                        "needs a test, a then branch and an else branch (use `when` for one branch)",
                    );
                }
                let test = self.expr(ops[0], NON_TAIL)?;
                let then = self.expr(ops[1], ctx)?;
                let els = self.expr(ops[2], ctx)?;
                Ok(self.push(CoreKind::If { test, then, els }, span))
            }
            Kw::Define => Err(Error::syntax(
                "a definition is only allowed at the start of a body or at top level",
                span,
            )),
            Kw::Lambda => {
                if ops.len() < 2 || !self.out.data.is_list(ops[0]) {
                    return arity_err("needs a parameter list and a body");
                }
                let params = self.out.data.list(ops[0]).to_vec();
                self.lambda(&params, &ops[1..], span)
            }
            Kw::Begin => {
                if ops.is_empty() {
                    return arity_err("needs at least one expression");
                }
                self.sequence(ops, ctx, span)
            }
            Kw::Let | Kw::Letrec | Kw::LetrecStar => {
                if ops.len() < 2 {
                    return arity_err("needs bindings and a body");
                }
                if kw == Kw::Let && self.out.data.sym(ops[0]).is_some() {
                    return Err(Error::syntax(
                        "named `let` is not supported (use `loop`)",
                        span,
                    ));
                }
                let pairs = self.binding_list(ops[0], true)?;
                let mut binds = Vec::with_capacity(pairs.len());
                for (name, init_d, nspan) in pairs {
                    let init = self.expr(init_d, NON_TAIL)?;
                    binds.push(Bind {
                        name,
                        init,
                        span: nspan,
                    });
                }
                let body = self.body(&ops[1..], ctx, span)?;
                let binds = self.binds(&binds);
                let kind = if kw == Kw::Let {
                    CoreKind::Let { binds, body }
                } else {
                    CoreKind::Letrec { binds, body }
                };
                Ok(self.push(kind, span))
            }
            Kw::LetStar => {
                if ops.len() < 2 {
                    return arity_err("needs bindings and a body");
                }
                let pairs = self.binding_list(ops[0], false)?;
                let mut inits = Vec::with_capacity(pairs.len());
                for &(name, init_d, nspan) in &pairs {
                    inits.push(Bind {
                        name,
                        init: self.expr(init_d, NON_TAIL)?,
                        span: nspan,
                    });
                }
                let mut acc = self.body(&ops[1..], ctx, span)?;
                if inits.is_empty() {
                    let binds = self.binds(&[]);
                    return Ok(self.push(CoreKind::Let { binds, body: acc }, span));
                }
                for b in inits.into_iter().rev() {
                    let binds = self.binds(&[b]);
                    acc = self.push(CoreKind::Let { binds, body: acc }, span);
                }
                Ok(acc)
            }
            Kw::Cond => self.cond(ops, ctx, span),
            Kw::When | Kw::Unless => {
                if ops.len() < 2 {
                    return arity_err("needs a test and at least one expression");
                }
                let test = self.expr(ops[0], NON_TAIL)?;
                let body = self.sequence(&ops[1..], ctx, span)?;
                let f = self.push(CoreKind::Bool(false), span);
                let (then, els) = if kw == Kw::When { (body, f) } else { (f, body) };
                Ok(self.push(CoreKind::If { test, then, els }, span))
            }
            Kw::And => {
                if ops.is_empty() {
                    return Ok(self.push(CoreKind::Bool(true), span));
                }
                let mut acc = self.expr(ops[ops.len() - 1], ctx)?;
                for &e in ops[..ops.len() - 1].iter().rev() {
                    let test = self.expr(e, NON_TAIL)?;
                    let f = self.push(CoreKind::Bool(false), span);
                    acc = self.push(
                        CoreKind::If {
                            test,
                            then: acc,
                            els: f,
                        },
                        span,
                    );
                }
                Ok(acc)
            }
            Kw::Or => {
                if ops.is_empty() {
                    return Ok(self.push(CoreKind::Bool(false), span));
                }
                let mut acc = self.expr(ops[ops.len() - 1], ctx)?;
                for &e in ops[..ops.len() - 1].iter().rev() {
                    let init = self.expr(e, NON_TAIL)?;
                    let t = self.gensym("t");
                    let test = self.push(CoreKind::Var(t), span);
                    let then = self.push(CoreKind::Var(t), span);
                    let iff = self.push(
                        CoreKind::If {
                            test,
                            then,
                            els: acc,
                        },
                        span,
                    );
                    let binds = self.binds(&[Bind {
                        name: t,
                        init,
                        span,
                    }]);
                    acc = self.push(CoreKind::Let { binds, body: iff }, span);
                }
                Ok(acc)
            }
            Kw::Loop => self.loop_form(ops, span),
            Kw::Recur => {
                let Some((s, n)) = ctx.recur else {
                    return Err(Error::syntax(
                        "`recur` is only allowed in tail position of a `loop` body",
                        span,
                    ));
                };
                if ops.len() != n {
                    return Err(Error::new(
                        ErrorKind::Arity,
                        format!(
                            "`recur` takes {n} argument{} (one per loop variable), got {}",
                            plural(n),
                            ops.len()
                        ),
                        span,
                    ));
                }
                let head = self.push(CoreKind::Var(s), span);
                let mut args = vec![self.push(CoreKind::Var(s), span)];
                for &a in ops {
                    args.push(self.expr(a, NON_TAIL)?);
                }
                let args = self.ids(&args);
                Ok(self.push(CoreKind::Call { head, args }, span))
            }
            Kw::Else => Err(Error::syntax(
                "`else` is only allowed as the test of the last `cond` clause",
                span,
            )),
            Kw::Arrow => Err(Error::syntax("`=>` clauses are not supported", span)),
        }
    }

    /// `((n1 e1) …)`, with names checked; `distinct` for `let`, `letrec`, `letrec*`.
    fn binding_list(&self, d: DatumId, distinct: bool) -> Result<Vec<(Sym, DatumId, Span)>> {
        if !self.out.data.is_list(d) {
            return Err(Error::syntax(
                "bindings must be a list of (name value) pairs",
                self.span(d),
            ));
        }
        let mut out: Vec<(Sym, DatumId, Span)> = Vec::new();
        let mut seen = HashSet::new();
        for &b in self.out.data.list(d) {
            let pair = self.out.data.list(b);
            if !self.out.data.is_list(b) || pair.len() != 2 {
                return Err(Error::syntax(
                    "a binding must be (name value)",
                    self.span(b),
                ));
            }
            let name = self.binder(pair[0], "a bound name")?;
            if distinct && !seen.insert(name) {
                return Err(Error::syntax(
                    format!("`{}` is bound twice", self.name(name)),
                    self.span(pair[0]),
                ));
            }
            out.push((name, pair[1], self.span(pair[0])));
        }
        Ok(out)
    }

    fn cond(&mut self, clauses: &[DatumId], ctx: Ctx, span: Span) -> Result<CoreId> {
        if clauses.is_empty() {
            return Err(Error::syntax("`cond` needs at least one clause", span));
        }
        let mut parts: Vec<(Option<CoreId>, CoreId)> = Vec::with_capacity(clauses.len());
        for (k, &c) in clauses.iter().enumerate() {
            let items = self.out.data.list(c).to_vec();
            if !self.out.data.is_list(c) || items.len() < 2 {
                return Err(Error::syntax(
                    "a `cond` clause must be (test expression …)",
                    self.span(c),
                ));
            }
            let is_else = self.keyword(items[0]) == Some(Kw::Else);
            if is_else && k + 1 != clauses.len() {
                return Err(Error::syntax(
                    "the `else` clause must be the last",
                    self.span(c),
                ));
            }
            if items
                .get(1)
                .is_some_and(|&x| self.keyword(x) == Some(Kw::Arrow))
            {
                return Err(Error::syntax(
                    "`=>` clauses are not supported",
                    self.span(items[1]),
                ));
            }
            let test = if is_else {
                None
            } else {
                Some(self.expr(items[0], NON_TAIL)?)
            };
            let body = self.sequence(&items[1..], ctx, self.span(c))?;
            parts.push((test, body));
        }
        let mut acc: Option<CoreId> = None;
        for (test, body) in parts.into_iter().rev() {
            acc = Some(match test {
                None => body,
                Some(test) => {
                    let els = match acc {
                        Some(a) => a,
                        None => self.push(CoreKind::Bool(false), span),
                    };
                    self.push(
                        CoreKind::If {
                            test,
                            then: body,
                            els,
                        },
                        span,
                    )
                }
            });
        }
        acc.ok_or_else(|| Error::syntax("`cond` needs at least one clause", span))
    }

    /// `(loop ((v i) …) body)` ⇒ `(let ((L (lambda (S v …) body′))) (L L i …))`.
    fn loop_form(&mut self, ops: &[DatumId], span: Span) -> Result<CoreId> {
        if ops.len() < 2 {
            return Err(Error::syntax("`loop` needs bindings and a body", span));
        }
        let pairs = self.binding_list(ops[0], true)?;
        let l = self.gensym("loop");
        let s = self.gensym("self");
        let mut inits = Vec::with_capacity(pairs.len() + 1);
        let mut params = vec![(s, span)];
        for &(name, init_d, nspan) in &pairs {
            inits.push(self.expr(init_d, NON_TAIL)?);
            params.push((name, nspan));
        }
        let body = self.body(
            &ops[1..],
            Ctx {
                recur: Some((s, pairs.len())),
            },
            span,
        )?;
        let start = self.out.syms.len() as u32;
        self.out.syms.extend_from_slice(&params);
        let lambda = self.push(
            CoreKind::Lambda {
                params: Range {
                    start,
                    len: params.len() as u32,
                },
                body,
            },
            span,
        );
        let head = self.push(CoreKind::Var(l), span);
        let mut args = vec![self.push(CoreKind::Var(l), span)];
        args.extend(inits);
        let args = self.ids(&args);
        let call = self.push(CoreKind::Call { head, args }, span);
        let binds = self.binds(&[Bind {
            name: l,
            init: lambda,
            span,
        }]);
        Ok(self.push(CoreKind::Let { binds, body: call }, span))
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::reader::read;

    fn ex(src: &str) -> Result<Expanded> {
        expand(read(src)?)
    }

    #[test]
    fn misplaced_forms_are_syntax_errors() {
        for src in [
            "(if 1 2)",
            "(+ 1 (define x 2))",
            "(begin)",
            "(let loop ((i 0)) i)",
            "(lambda (x x) x)",
            "(let ((x 1) (x 2)) x)",
            "(cond (else 1) (#t 2))",
            "(cond (1 => car))",
            "(recur 1)",
            "(loop ((i 0)) (+ 1 (recur i)))",
            "(loop ((i 0)) (lambda () (recur i)))",
            "(define x 1)",
            "(define x 1) (define x 2) x",
            "else",
            "(lambda (if) 1)",
            "()",
            "",
            "(define (f) (define a 1) (+ a 1) (define b 2) b) 1",
        ] {
            let e = ex(src).expect_err(src);
            assert_eq!(e.kind, ErrorKind::Syntax, "{src}: {e}");
        }
        assert_eq!(
            ex("(loop ((i 0)) (recur 1 2))")
                .map(|_| ())
                .expect_err("recur arity")
                .kind,
            ErrorKind::Arity
        );
    }

    #[test]
    fn derived_forms_expand() {
        for src in [
            "(let* ((x 1) (x (+ x 1))) x)",
            "(cond ((< 1 2) 1) (else 2))",
            "(loop ((i 0)) (cond ((= i 3) i) (else (recur (+ i 1)))))",
            "(loop ((i 0)) (define j (+ i 1)) (if (> j 3) j (recur j)))",
            "(or #f (and 1 2))",
            "(when #t 1 2)",
            "(define (f x) (define y x) y) (f 1)",
        ] {
            ex(src).unwrap_or_else(|e| panic!("{src}: {e}"));
        }
    }
}
