//! # ndvm-components
//!
//! Plain-data, serde-able types shared by the ndvm tools and, as the ECS engine grows, by its
//! systems: today the bindings file that feeds `ndvm run`.

pub mod bindings_file;

pub use bindings_file::{BindingsFile, MatrixSpec};
