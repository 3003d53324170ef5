//! The compiler from a subset of the dialect to bytecode, so one program runs on both clients.
//!
//! The subset: numbers, input and variable references, `let`, `let*`, `if` (both arms),
//! `cond` (with an `else` clause), `loop`/`recur` (`recur` in tail position of its loop), and
//! calls of base or custom primitives (`[a b c]` is `(vec a b c)`). The program is one form.
//!
//! The translation keeps the walk's order of work, so both clients record the same numeric
//! nodes and agree bit for bit: operands are evaluated left to right, `(+ a b)` becomes `ADD`
//! and `(+ a b c)` `CALL + 3` (the same fold), `let` evaluates its inits before binding, an `if`
//! becomes `IF … ELSE … END` (per-lane, merged as the walk merges), and a loop is a label, its
//! body, and `recur` as `SET`s and a `JUMP` back to the label. Each instruction is spanned at
//! the form it came from, so errors point into the dialect source.

use crate::code::{Code, Parts};
use crate::instr::{Instr, Number};
use ndvm_engine::error::{Error, ErrorKind, Result, Span};
use ndvm_engine::extension::Registry;
use ndvm_engine::prims::Prim;
use ndvm_engine::syntax::reader::{Data, DatumId, DatumKind, read};
use ndvm_engine::syntax::scope::Scope;

/// Compiles dialect source (the subset above) against the input names and custom primitives.
pub fn compile(source: &str, inputs: &[&str], registry: &Registry) -> Result<Code> {
    let data = read(source)?;
    let [form] = data.top[..] else {
        let span = data
            .top
            .get(1)
            .map_or(Span::default(), |&d| data.get(d).span);
        return Err(Error::syntax(
            "the bytecode subset compiles one form (no top-level definitions)",
            span,
        ));
    };
    let mut c = Compiler {
        data: &data,
        registry,
        inputs,
        parts: Parts {
            source: source.to_string(),
            inputs: inputs.iter().map(|s| s.to_string()).collect(),
            ..Parts::default()
        },
        scope: Scope::default(),
        loops: Vec::new(),
    };
    c.expr(form, Tail::No)?;
    let span = data.get(form).span;
    c.emit(Instr::Ret, span);
    Code::link(c.parts, registry)
}

/// Whether a form is in tail position of the innermost loop (where `recur` may appear).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tail {
    No,
    Loop,
}

/// An open `loop`: its variables' locals and the instruction its `recur` jumps to.
struct Loop {
    vars: Vec<u32>,
    top: u32,
}

struct Compiler<'a> {
    data: &'a Data,
    registry: &'a Registry,
    inputs: &'a [&'a str],
    parts: Parts,
    /// Bound names, innermost last, with their locals.
    scope: Scope<String, u32>,
    loops: Vec<Loop>,
}

const SUBSET: &str = "numbers, variables, let, let*, if, cond, loop/recur and primitive calls";

impl Compiler<'_> {
    fn emit(&mut self, ins: Instr, span: Span) {
        self.parts.instrs.push(ins);
        self.parts.spans.push(span);
    }

    fn here(&self) -> u32 {
        self.parts.instrs.len() as u32
    }

    fn name(&self, d: DatumId) -> Option<&str> {
        self.data.sym(d).map(|s| self.data.symbols.name(s))
    }

    fn local(&mut self, name: &str) -> u32 {
        self.parts.locals.push(name.to_string());
        (self.parts.locals.len() - 1) as u32
    }

    fn expr(&mut self, d: DatumId, tail: Tail) -> Result<()> {
        // Forms nest as deep as the reader allows (10,000 levels): grow the stack, not overflow.
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.expr_at(d, tail))
    }

    fn expr_at(&mut self, d: DatumId, tail: Tail) -> Result<()> {
        let datum = *self.data.get(d);
        let span = datum.span;
        match datum.kind {
            DatumKind::Num(l) => self.emit(
                Instr::Push {
                    value: Number::from(l),
                },
                span,
            ),
            DatumKind::Bool(_) => {
                return Err(Error::syntax(
                    format!("booleans are not in the bytecode subset ({SUBSET})"),
                    span,
                ));
            }
            DatumKind::Sym(s) => {
                let name = self.data.symbols.name(s);
                if let Some(l) = self.scope.find(name) {
                    self.emit(Instr::Get { local: l }, span);
                } else if let Some(i) = self.inputs.iter().position(|n| *n == name) {
                    self.emit(Instr::Load { input: i as u32 }, span);
                } else {
                    return Err(Error::new(
                        ErrorKind::Unbound,
                        format!("unbound variable `{name}`"),
                        span,
                    ));
                }
            }
            DatumKind::List { .. } => self.list(d, span, tail)?,
        }
        Ok(())
    }

    fn list(&mut self, d: DatumId, span: Span, tail: Tail) -> Result<()> {
        let items = self.data.list(d).to_vec();
        let Some((&head, args)) = items.split_first() else {
            return Err(Error::syntax("an empty combination `()`", span));
        };
        let head_name = self.name(head).map(str::to_string);
        let bound = |n: &str| self.scope.contains(n) || self.inputs.contains(&n);
        match head_name.as_deref() {
            Some("let") | Some("let*") if !bound(head_name.as_deref().unwrap_or("")) => {
                self.let_form(args, span, head_name.as_deref() == Some("let*"), tail)
            }
            Some("if") => self.if_form(args, span, tail),
            Some("cond") => self.cond(args, span, tail),
            Some("loop") => self.loop_form(args, span),
            Some("recur") => self.recur(args, span, tail),
            Some(name) if !bound(name) => self.call(name, args, span),
            Some(name) => Err(Error::syntax(
                format!(
                    "`{name}` is a variable; calling variables is not in the bytecode subset ({SUBSET})"
                ),
                span,
            )),
            None => Err(Error::syntax(
                format!("only named primitives can be called in the bytecode subset ({SUBSET})"),
                span,
            )),
        }
    }

    /// The bindings `((x e) …)` of a `let` or `loop`: names, init forms.
    fn bindings(&self, d: DatumId, what: &str) -> Result<Vec<(String, DatumId, Span)>> {
        let span = self.data.get(d).span;
        if !self.data.is_list(d) {
            return Err(Error::syntax(
                format!("`{what}` needs a list of bindings"),
                span,
            ));
        }
        let mut out = Vec::new();
        for &b in self.data.list(d) {
            let pair = self.data.list(b);
            let bspan = self.data.get(b).span;
            match pair {
                [n, e] if self.name(*n).is_some() => {
                    out.push((self.name(*n).unwrap_or("").to_string(), *e, bspan));
                }
                _ => {
                    return Err(Error::syntax(
                        format!("a `{what}` binding is `(name expression)`"),
                        bspan,
                    ));
                }
            }
        }
        Ok(out)
    }

    /// A body of one or more forms: all but the last are evaluated and dropped.
    fn body(&mut self, forms: &[DatumId], span: Span, tail: Tail) -> Result<()> {
        let Some((&last, init)) = forms.split_last() else {
            return Err(Error::syntax("an empty body", span));
        };
        for &f in init {
            self.expr(f, Tail::No)?;
            self.emit(Instr::Pop, self.data.get(f).span);
        }
        self.expr(last, tail)
    }

    fn let_form(&mut self, args: &[DatumId], span: Span, star: bool, tail: Tail) -> Result<()> {
        let what = if star { "let*" } else { "let" };
        let Some((&binds, body)) = args.split_first() else {
            return Err(Error::syntax(
                format!("`{what}` needs bindings and a body"),
                span,
            ));
        };
        let binds = self.bindings(binds, what)?;
        let depth = self.scope.len();
        if star {
            for (name, e, bspan) in binds {
                self.expr(e, Tail::No)?;
                let l = self.local(&name);
                self.emit(Instr::Set { local: l }, bspan);
                self.scope.push((name, l));
            }
        } else {
            for (_, e, _) in &binds {
                self.expr(*e, Tail::No)?;
            }
            let locals: Vec<u32> = binds.iter().map(|(n, ..)| self.local(n)).collect();
            for ((_, _, bspan), &l) in binds.iter().zip(&locals).rev() {
                self.emit(Instr::Set { local: l }, *bspan);
            }
            for ((name, ..), l) in binds.into_iter().zip(locals) {
                self.scope.push((name, l));
            }
        }
        let out = self.body(body, span, tail);
        self.scope.truncate(depth);
        out
    }

    fn if_form(&mut self, args: &[DatumId], span: Span, tail: Tail) -> Result<()> {
        let [test, then, els] = args[..] else {
            return Err(Error::syntax(
                "`if` in the bytecode subset takes a test and two arms",
                span,
            ));
        };
        self.expr(test, Tail::No)?;
        self.emit(Instr::If, span);
        self.expr(then, tail)?;
        self.emit(Instr::Else, span);
        self.expr(els, tail)?;
        self.emit(Instr::End, span);
        Ok(())
    }

    fn cond(&mut self, clauses: &[DatumId], span: Span, tail: Tail) -> Result<()> {
        let Some((&first, rest)) = clauses.split_first() else {
            return Err(Error::syntax(
                "`cond` needs an `else` clause in the bytecode subset",
                span,
            ));
        };
        let parts = self.data.list(first).to_vec();
        let cspan = self.data.get(first).span;
        let Some((&test, body)) = parts.split_first() else {
            return Err(Error::syntax(
                "a `cond` clause is `(test expression …)`",
                cspan,
            ));
        };
        if self.name(test) == Some("else") {
            return self.body(body, cspan, tail);
        }
        if rest.is_empty() {
            return Err(Error::syntax(
                "`cond` needs an `else` clause in the bytecode subset",
                span,
            ));
        }
        self.expr(test, Tail::No)?;
        self.emit(Instr::If, cspan);
        self.body(body, cspan, tail)?;
        self.emit(Instr::Else, cspan);
        self.cond(rest, span, tail)?;
        self.emit(Instr::End, cspan);
        Ok(())
    }

    fn loop_form(&mut self, args: &[DatumId], span: Span) -> Result<()> {
        let Some((&binds, body)) = args.split_first() else {
            return Err(Error::syntax("`loop` needs bindings and a body", span));
        };
        let binds = self.bindings(binds, "loop")?;
        for (_, e, _) in &binds {
            self.expr(*e, Tail::No)?;
        }
        let vars: Vec<u32> = binds.iter().map(|(n, ..)| self.local(n)).collect();
        for ((_, _, bspan), &l) in binds.iter().zip(&vars).rev() {
            self.emit(Instr::Set { local: l }, *bspan);
        }
        let depth = self.scope.len();
        for ((name, ..), &l) in binds.iter().zip(&vars) {
            self.scope.push((name.clone(), l));
        }
        let top = self.here();
        self.loops.push(Loop { vars, top });
        let out = self.body(body, span, Tail::Loop);
        self.loops.pop();
        self.scope.truncate(depth);
        out
    }

    fn recur(&mut self, args: &[DatumId], span: Span, tail: Tail) -> Result<()> {
        if tail != Tail::Loop {
            return Err(Error::syntax(
                "`recur` must be in tail position of its `loop`",
                span,
            ));
        }
        let Some(lp) = self.loops.last() else {
            return Err(Error::syntax("`recur` outside a `loop`", span));
        };
        let (vars, top) = (lp.vars.clone(), lp.top);
        if args.len() != vars.len() {
            return Err(Error::new(
                ErrorKind::Arity,
                format!("`recur` takes {} operands, got {}", vars.len(), args.len()),
                span,
            ));
        }
        for &a in args {
            self.expr(a, Tail::No)?;
        }
        for &l in vars.iter().rev() {
            self.emit(Instr::Set { local: l }, span);
        }
        self.emit(Instr::Jump { target: top }, span);
        Ok(())
    }

    fn call(&mut self, name: &str, args: &[DatumId], span: Span) -> Result<()> {
        let known = Prim::from_name(name).is_some() || self.registry.find(name).is_some();
        if !known {
            let msg = if [
                "lambda", "define", "quote", "begin", "and", "or", "when", "unless",
            ]
            .contains(&name)
            {
                format!("`{name}` is not in the bytecode subset ({SUBSET})")
            } else {
                format!("unknown primitive `{name}`")
            };
            return Err(Error::new(ErrorKind::Unbound, msg, span));
        }
        for &a in args {
            self.expr(a, Tail::No)?;
        }
        let ins = match (Prim::from_name(name), args.len()) {
            (Some(Prim::Add), 2) => Instr::Add,
            (Some(Prim::Sub), 2) => Instr::Sub,
            (Some(Prim::Sub), 1) => Instr::Neg,
            (Some(Prim::Mul), 2) => Instr::Mul,
            (Some(Prim::Div), 2) => Instr::Div,
            (Some(Prim::Exp), 1) => Instr::Exp,
            (Some(Prim::Log), 1) => Instr::Log,
            (Some(Prim::Sin), 1) => Instr::Sin,
            (Some(Prim::Cos), 1) => Instr::Cos,
            (Some(Prim::Dot), 2) => Instr::Dot,
            (Some(Prim::Lt), 2) => Instr::Lt,
            (Some(Prim::Le), 2) => Instr::Le,
            (Some(Prim::Gt), 2) => Instr::Gt,
            (Some(Prim::Ge), 2) => Instr::Ge,
            (Some(Prim::NumEq), 2) => Instr::Eq,
            (Some(Prim::Not), 1) => Instr::Not,
            _ => {
                let callee = match self.parts.callees.iter().position(|c| c == name) {
                    Some(i) => i as u32,
                    None => {
                        self.parts.callees.push(name.to_string());
                        (self.parts.callees.len() - 1) as u32
                    }
                };
                Instr::Call {
                    callee,
                    argc: args.len() as u32,
                }
            }
        };
        self.emit(ins, span);
        Ok(())
    }
}
