//! Differential testing for ndvm.
//!
//! A program the engine runs wrong is worse than one it refuses, so the engine is checked
//! against things that share none of its code:
//!
//! - [`generate`]: a typed, seeded generator of well-formed, parameter-dependent programs over
//!   the dialect, each tagged with the [`Feature`] families it uses;
//! - [`oracle`]: an independent tree-walking evaluator in f64 with forward-mode dual numbers;
//! - [`gates`]: the checks each program must pass — G1 forward vs oracle, G2 gradient vs
//!   oracle, G3 gradient vs central finite differences of the engine's own forward, G4 a batch
//!   of lanes equal to each lane run alone, byte for byte;
//! - [`screen`]: the oracle's screening of generated programs (values in range, branch tests
//!   away from switching, f32 conditioning);
//! - [`campaign`]: many programs checked in parallel, with a per-family coverage [`Report`]
//!   (what `ndvm fuzz` prints) and a frozen corpus;
//! - [`minimize`]: shrinks a failing program while it keeps failing the same way;
//! - [`mutate`] and [`untrusted`]: bad input — mutated programs run under small limits must
//!   give a value or a clean error, never a panic, a hang or unbounded memory.
//!
//! ```
//! use ndvm_difftest::prelude::*;
//!
//! let report = campaign(&Campaign { n: 20, seed: 7, ..Campaign::default() }, |_| {});
//! assert_eq!(report.checked, 20);
//! assert!(report.failures.is_empty());
//! ```

pub mod campaign;
pub mod feature;
pub mod gates;
pub mod generate;
pub mod minimize;
pub mod mutate;
pub mod oracle;
pub mod report;
pub mod screen;
pub mod sexpr;
pub mod untrusted;

pub use campaign::{Campaign, campaign};
pub use feature::Feature;
pub use report::Report;

/// The items most callers need.
pub mod prelude {
    pub use crate::campaign::{Campaign, campaign};
    pub use crate::feature::Feature;
    pub use crate::gates::{Gate, Target, Verdict, check};
    pub use crate::generate::generate;
    pub use crate::report::{Case, Failure, FamilyRow, Report};
}
