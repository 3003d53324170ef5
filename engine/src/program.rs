//! A decoded program: a flat post-order node array with lexical addresses and primitive ids.
//!
//! Children always precede their parent, the root is the last node, and every node has a span.
//! A program is immutable and shared (`Arc`); [`ProgramCache`] memoizes decoding by content hash,
//! so a population that repeats a program (or a fit that evaluates it every step) decodes it once.

use crate::error::{Result, Span};
use crate::extension::Registry;
use crate::prims::Prim;
use crate::syntax::reader::{Data, Literal};
use crate::syntax::symbols::Sym;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};

pub type NodeId = u32;

/// One decoded form. Operand lists are `(start, len)` ranges into [`Program::kids`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Node {
    Num(Literal),
    Bool(bool),
    /// A quoted datum (an index into [`Program::data`]).
    Quote(u32),
    /// A variable of an enclosing lambda's frame: `depth` frames up, slot `slot`.
    Local {
        depth: u32,
        slot: u32,
        name: Sym,
    },
    /// A top-level definition (a slot of the top-level frame).
    Global {
        slot: u32,
        name: Sym,
    },
    /// A host input, by its index in [`Program::inputs`].
    Input(u32),
    /// A base-environment primitive used as a value.
    Base(Prim),
    /// A custom primitive ([`Program::primitives`] index) used as a value.
    Ext(u32),
    If {
        test: NodeId,
        then: NodeId,
        els: NodeId,
    },
    Lambda(u32),
    /// `let` or `letrec*`: evaluate `inits` in order into slots `first..`, then `body`.
    Bind {
        first: u32,
        start: u32,
        len: u32,
        body: NodeId,
    },
    Seq {
        start: u32,
        len: u32,
    },
    /// A call of a computed procedure. `kids[start]` is the callee, then the operands.
    Call {
        start: u32,
        len: u32,
        tail: bool,
    },
    /// A call whose head is a base primitive (resolved lexically: not shadowed).
    PrimCall {
        prim: Prim,
        start: u32,
        len: u32,
        tail: bool,
    },
    /// A top-level `(define name init)`.
    Define {
        slot: u32,
        init: NodeId,
    },
    /// The program: top-level forms in order; the last is the result.
    Top {
        start: u32,
        len: u32,
    },
}

/// What the walk needs to call a closure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LambdaInfo {
    pub params: u32,
    /// Parameters plus every `let`/`letrec*` variable of the body (outside nested lambdas).
    pub frame_size: u32,
    pub body: NodeId,
}

/// A decoded program.
#[derive(Debug)]
pub struct Program {
    pub source: Arc<str>,
    pub nodes: Vec<Node>,
    pub spans: Vec<Span>,
    pub kids: Vec<NodeId>,
    pub lambdas: Vec<LambdaInfo>,
    /// Names of the host inputs the program was decoded against, in binding order.
    pub inputs: Vec<String>,
    /// Size of the top-level frame (top-level definitions, then top-level `let` variables).
    pub top_frame: u32,
    /// Read data: quoted data and symbol names.
    pub data: Data,
    pub root: NodeId,
    /// The custom primitives the program was decoded against.
    pub primitives: Registry,
}

impl Program {
    /// Reads, expands and decodes `source` against the given host input names.
    pub fn new(source: &str, inputs: &[&str]) -> Result<Program> {
        Program::with_primitives(source, inputs, &Registry::default())
    }

    /// Like [`Program::new`], with custom primitives callable by name.
    pub fn with_primitives(
        source: &str,
        inputs: &[&str],
        primitives: &Registry,
    ) -> Result<Program> {
        let data = crate::syntax::reader::read(source)?;
        let expanded = crate::syntax::expand::expand(data)?;
        crate::syntax::decode::decode(expanded, source.into(), inputs, primitives)
    }

    pub fn node(&self, id: NodeId) -> Node {
        self.nodes[id as usize]
    }

    pub fn span(&self, id: NodeId) -> Span {
        self.spans[id as usize]
    }

    pub fn kids(&self, start: u32, len: u32) -> &[NodeId] {
        &self.kids[start as usize..(start + len) as usize]
    }

    pub fn symbol_name(&self, s: Sym) -> &str {
        self.data.symbols.name(s)
    }
}

/// Decoded programs by content hash (source text and input names), shared as `Arc`s.
#[derive(Debug, Default)]
pub struct ProgramCache {
    map: Mutex<HashMap<u64, Vec<Arc<Program>>>>,
}

impl ProgramCache {
    pub fn new() -> Self {
        Self::default()
    }

    /// The cached program for `source` decoded against `inputs`, decoding it on a miss.
    pub fn get(&self, source: &str, inputs: &[&str]) -> Result<Arc<Program>> {
        self.get_with(source, inputs, &Registry::default())
    }

    /// Like [`ProgramCache::get`], decoding against custom primitives (programs decoded
    /// against different primitive names are different entries).
    pub fn get_with(
        &self,
        source: &str,
        inputs: &[&str],
        primitives: &Registry,
    ) -> Result<Arc<Program>> {
        let signature = primitives.signature();
        let mut h = DefaultHasher::new();
        source.hash(&mut h);
        inputs.hash(&mut h);
        signature.hash(&mut h);
        let key = h.finish();
        let same = |p: &Arc<Program>| {
            &*p.source == source
                && p.inputs
                    .iter()
                    .map(String::as_str)
                    .eq(inputs.iter().copied())
                && p.primitives.signature() == signature
        };
        if let Ok(map) = self.map.lock()
            && let Some(p) = map.get(&key).and_then(|v| v.iter().find(|p| same(p)))
        {
            return Ok(p.clone());
        }
        let program = Arc::new(Program::with_primitives(source, inputs, primitives)?);
        if let Ok(mut map) = self.map.lock() {
            map.entry(key).or_default().push(program.clone());
        }
        Ok(program)
    }

    /// How many distinct programs are cached.
    pub fn len(&self) -> usize {
        self.map
            .lock()
            .map_or(0, |m| m.values().map(Vec::len).sum())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets every program (those handed out stay valid): bounds a long-lived cache.
    pub fn clear(&self) {
        if let Ok(mut map) = self.map.lock() {
            map.clear();
        }
    }
}
