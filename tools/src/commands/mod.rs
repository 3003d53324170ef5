//! One module per `ndvm` subcommand: its arguments (clap) and what it runs. What several
//! commands share lives beside this folder: [`crate::files`] (scenes in, outputs out),
//! [`crate::interrupt`] (Ctrl-C), [`crate::output`] (tables and JSON), [`crate::diagnostics`]
//! (located program errors), [`crate::device`] (`--device`).

pub mod asm;
pub mod fit;
pub mod fuzz;
pub mod run;
pub mod search;
