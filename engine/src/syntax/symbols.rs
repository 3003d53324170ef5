//! Symbol interning: names become small integers once, at read time.
//!
//! Symbols are numbered in order of first appearance, so nothing depends on the hash. Each name
//! is stored once; the index is a hash table of symbol numbers keyed by their names (foldhash,
//! seeded per process, so colliding names cannot be prepared in advance; foldhash does not claim
//! full HashDoS resistance, and the program size limit bounds the rest). Names the expander
//! knows — keywords, `quote`, `vec` — are borrowed, not copied: interning them allocates nothing.

use foldhash::fast::RandomState;
use hashbrown::HashTable;
use std::borrow::Cow;
use std::hash::BuildHasher;

/// An interned name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sym(pub u32);

/// The interner of one program.
#[derive(Clone, Debug, Default)]
pub struct Symbols {
    names: Vec<Cow<'static, str>>,
    index: HashTable<Sym>,
    hasher: RandomState,
}

impl Symbols {
    pub fn intern(&mut self, name: &str) -> Sym {
        self.intern_cow(name, |n| Cow::Owned(n.to_string()))
    }

    /// [`Symbols::intern`] for a name that lives for the whole program run (no copy).
    pub fn intern_static(&mut self, name: &'static str) -> Sym {
        self.intern_cow(name, |_| Cow::Borrowed(name))
    }

    fn intern_cow(&mut self, name: &str, store: impl FnOnce(&str) -> Cow<'static, str>) -> Sym {
        let hash = self.hasher.hash_one(name);
        let names = &self.names;
        if let Some(&s) = self.index.find(hash, |s| names[s.0 as usize] == name) {
            return s;
        }
        let s = Sym(self.names.len() as u32);
        self.names.push(store(name));
        let (names, hasher) = (&self.names, &self.hasher);
        self.index
            .insert_unique(hash, s, |s| hasher.hash_one(&*names[s.0 as usize]));
        s
    }

    /// Room for `n` more names without rehashing.
    pub fn reserve(&mut self, n: usize) {
        self.names.reserve(n);
        let (names, hasher) = (&self.names, &self.hasher);
        self.index
            .reserve(n, |s| hasher.hash_one(&*names[s.0 as usize]));
    }

    pub fn lookup(&self, name: &str) -> Option<Sym> {
        let hash = self.hasher.hash_one(name);
        self.index
            .find(hash, |s| self.names[s.0 as usize] == name)
            .copied()
    }

    pub fn name(&self, s: Sym) -> &str {
        self.names.get(s.0 as usize).map_or("?", |n| n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_numbered_in_order_of_first_appearance() {
        let mut s = Symbols::default();
        let a = s.intern("alpha");
        let k = s.intern_static("lambda");
        assert_eq!((a, k), (Sym(0), Sym(1)));
        assert_eq!(s.intern("lambda"), k);
        assert_eq!(s.intern_static("alpha"), a);
        assert_eq!(s.lookup("alpha"), Some(a));
        assert_eq!(s.lookup("beta"), None);
        assert_eq!(
            (s.name(a), s.name(k), s.name(Sym(9))),
            ("alpha", "lambda", "?")
        );
        let many: Vec<Sym> = (0..1000).map(|i| s.intern(&format!("x{i}"))).collect();
        assert!(
            many.iter()
                .enumerate()
                .all(|(i, &m)| m == Sym(i as u32 + 2))
        );
        assert!(
            many.iter()
                .enumerate()
                .all(|(i, &m)| s.lookup(&format!("x{i}")) == Some(m))
        );
    }
}
