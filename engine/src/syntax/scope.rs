//! Lexical scope for the front ends: the names bound at a point of a program, innermost last,
//! with an index from each name to where it is bound.
//!
//! Binding forms push their names and truncate back to a mark when they end; a reference finds
//! its innermost binding by a hash lookup, not by scanning every enclosing binding (a scan made
//! 80,000 top-level defines take 3.5 s to decode, and a 80,000-binding `let*` 11 s to compile to
//! bytecode).

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;

#[derive(Clone, Debug)]
pub struct Scope<K, V> {
    stack: Vec<(K, V)>,
    index: HashMap<K, Vec<usize>>,
}

impl<K, V> Default for Scope<K, V> {
    fn default() -> Self {
        Scope {
            stack: Vec::new(),
            index: HashMap::new(),
        }
    }
}

impl<K: Hash + Eq + Clone, V: Copy> Scope<K, V> {
    /// Binds `name` (shadowing an outer binding of it).
    pub fn push(&mut self, (name, value): (K, V)) {
        self.index
            .entry(name.clone())
            .or_default()
            .push(self.stack.len());
        self.stack.push((name, value));
    }

    /// How many bindings there are: the mark [`Scope::truncate`] goes back to.
    pub fn len(&self) -> usize {
        self.stack.len()
    }

    pub fn is_empty(&self) -> bool {
        self.stack.is_empty()
    }

    /// Drops the bindings made since the scope had `mark` of them.
    pub fn truncate(&mut self, mark: usize) {
        while self.stack.len() > mark {
            let Some((name, _)) = self.stack.pop() else {
                break;
            };
            if let Some(at) = self.index.get_mut(&name) {
                at.pop();
                if at.is_empty() {
                    self.index.remove(&name);
                }
            }
        }
    }

    /// The innermost binding of `name`.
    pub fn find<Q: Hash + Eq + ?Sized>(&self, name: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        let &at = self.index.get(name)?.last()?;
        Some(self.stack[at].1)
    }

    /// Whether `name` is bound.
    pub fn contains<Q: Hash + Eq + ?Sized>(&self, name: &Q) -> bool
    where
        K: Borrow<Q>,
    {
        self.index.contains_key(name)
    }

    /// Every binding, outermost first.
    pub fn iter(&self) -> std::slice::Iter<'_, (K, V)> {
        self.stack.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inner_bindings_shadow_and_truncation_restores() {
        let mut s: Scope<String, u32> = Scope::default();
        s.push(("x".into(), 1));
        let mark = s.len();
        s.push(("x".into(), 2));
        s.push(("y".into(), 3));
        assert_eq!((s.find("x"), s.find("y")), (Some(2), Some(3)));
        s.truncate(mark);
        assert_eq!((s.find("x"), s.find("y")), (Some(1), None));
        assert!(s.contains("x") && !s.contains("y"));
        s.truncate(0);
        assert!(s.is_empty() && s.find("x").is_none());
    }
}
