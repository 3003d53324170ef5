//! Syntax: source text → data (reader) → core forms (expander) → a decoded program (decoder).

pub mod core;
pub mod decode;
pub mod expand;
pub mod reader;
pub mod scope;
pub mod symbols;
