//! Symbol interning: names become small integers once, at read time.

use std::collections::HashMap;

/// An interned name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sym(pub u32);

/// The interner of one program.
#[derive(Clone, Debug, Default)]
pub struct Symbols {
    names: Vec<Box<str>>,
    index: HashMap<Box<str>, Sym>,
}

impl Symbols {
    pub fn intern(&mut self, name: &str) -> Sym {
        if let Some(&s) = self.index.get(name) {
            return s;
        }
        let s = Sym(self.names.len() as u32);
        self.names.push(name.into());
        self.index.insert(name.into(), s);
        s
    }

    pub fn lookup(&self, name: &str) -> Option<Sym> {
        self.index.get(name).copied()
    }

    pub fn name(&self, s: Sym) -> &str {
        self.names.get(s.0 as usize).map_or("?", |n| n)
    }
}
