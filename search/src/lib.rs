//! # ndvm-search
//!
//! Program-and-parameter co-search: a population that keeps being refilled. A search scene (a
//! scene with a `search:` section, [`ndvm_components::scene::search`]) names proposers, a
//! calibration protocol, a success criterion and a budget; [`Search`] runs the loop on the
//! fit's stage systems ([`ndvm_systems::fit::Fit`]) and its answer is a Pareto front.
//!
//! | room | what |
//! |---|---|
//! | [`run`] | the loop: admission, retirement, held-out scores, set-up |
//! | [`record`], [`log`] | one calibration, and the calibration log on disk |
//! | [`proposers`] | where candidates come from: `Stream`, `Command`, `Evolve` (with its mutations), plugins |
//! | [`front`], [`report`], [`timeline`] | the answer: the Pareto front and its equivalence classes, the results, the best-so-far curve over time |
//! | [`symbolic`] | programs as mathematics: skeletons, equations (sympy, LaTeX), nice constants |
//! | [`shards`] | a search split into parts that run anywhere, spilled to disk and merged |
//!
//! A new proposer (a language model's client, say) goes in `proposers/`. A search with a
//! template (a model with holes, [`ndvm_systems::population::template`]) asks its proposers for
//! fillings, `(holes E1 E2 …)`, and calibrates the program each makes.
//!
//! ```
//! use ndvm_components::scene::Scene;
//! use ndvm_search::{Event, Search, SearchOptions};
//!
//! let scene = Scene::from_ron(r#"Scene(
//!     candidates: [Inline(name: "line", src: "(+ (* a x) b)")],
//!     data: Some(Synthetic(
//!         program: "(+ (* 2 x) 1)",
//!         inputs: {"x": Linspace(0.0, 1.0, 20)},
//!         split: Split(train: 0.7, seed: 1),
//!     )),
//!     loss: Mse,
//!     search: Some(Search(
//!         proposers: [Evolve()],
//!         calibration: Calibration(steps: 100, optimizer: Adam(lr: 0.1)),
//!         budget: Budget(calibrations: Some(64)),
//!     )),
//! )"#).unwrap();
//! let options = SearchOptions { threads: Some(1), ..SearchOptions::default() };
//! let mut search = Search::new(&scene, std::path::Path::new("."), &options).unwrap();
//! let mut log = Vec::new();
//! let report = search.run(|e| if let Event::Calibrated(r, _) = e { log.push(r.clone()) });
//! assert_eq!(report.summary.calibrations, 64);
//! assert_eq!(log.len(), 64);
//! assert!(report.summary.successes > 0);
//! ```
//!
//! Determinism: proposals are admitted, and records produced, in an order fixed by the scene
//! alone; under a calibration budget the log and the results are byte-identical at every thread
//! count (wall-clock figures apart).

pub mod front;
pub mod log;
pub mod proposers;
pub mod record;
pub mod report;
pub mod run;
pub mod shards;
pub mod symbolic;
pub mod tally;
pub mod timeline;

pub use proposers::{
    Context, Notes, Proposal, Proposer, ProposerError, ProposerPlugins, ProposerRegistry,
};
pub use record::Record;
pub use report::{LoopTimes, SearchReport, Summary};
pub use run::{DEFAULT_SECONDS, Event, MAX_SOURCE_BYTES, Search, SearchError, SearchOptions};

/// The types most callers need.
pub mod prelude {
    pub use crate::proposers::{Proposal, Proposer, ProposerPlugins};
    pub use crate::run::{Event, Search, SearchError, SearchOptions};
    pub use crate::{Record, SearchReport};
}
