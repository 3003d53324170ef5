//! Proposers: where a search's candidates come from.
//!
//! A [`Proposer`] is asked for candidates whenever the search has free slots and is shown every
//! finished calibration, in log order. The search asks its proposers in turn; one that returns
//! no candidates is exhausted, one that returns an error is dropped (the error is reported and
//! the search goes on with the others). Three are built in — [`stream::Stream`],
//! [`command::CommandProposer`] and [`evolve::Evolve`] — and a plugin adds more
//! ([`ProposerPlugins::proposer`] on the fit's plugins builder); a scene names it
//! `Plugin(name: "…", settings: {…})`.
//!
//! Everything a proposer does must depend only on what it was told (its settings, its seed,
//! the results it saw): then a search under a calibration budget is byte-identical at every
//! thread count.
//!
//! ```
//! use ndvm_components::scene::Scene;
//! use ndvm_systems::plugin::{Plugin, PluginsBuilder};
//! use ndvm_search::{Notes, Proposal, Proposer, ProposerError, ProposerPlugins, Search, SearchOptions};
//!
//! /// Proposes `(* a (expt x k))` for k = 1, 2, … up to `max`.
//! #[derive(Debug)]
//! struct Powers { next: u32, max: u32 }
//!
//! impl Proposer for Powers {
//!     fn name(&self) -> &str { "powers" }
//!     fn propose(&mut self, n: usize, _: &mut Notes) -> Result<Vec<Proposal>, ProposerError> {
//!         let mut out = Vec::new();
//!         while out.len() < n && self.next <= self.max {
//!             out.push(Proposal {
//!                 src: format!("(* a (expt x {}))", self.next),
//!                 params: vec!["a".into()],
//!                 name: format!("power {}", self.next),
//!             });
//!             self.next += 1;
//!         }
//!         Ok(out) // empty: nothing more to give
//!     }
//! }
//!
//! struct PowersPlugin;
//! impl Plugin for PowersPlugin {
//!     fn build(&self, plugins: &mut PluginsBuilder) {
//!         plugins.proposer("powers", |settings, _context| {
//!             let max = settings.get("max").and_then(|m| m.parse().ok()).unwrap_or(4);
//!             Ok(Box::new(Powers { next: 1, max }))
//!         });
//!     }
//! }
//!
//! let scene = Scene::from_ron(r#"Scene(
//!     candidates: [],
//!     data: Some(Synthetic(program: "(* 0.5 (* x x x))", inputs: {"x": Linspace(0.0, 2.0, 40)},
//!                          split: Split(train: 0.75, seed: 1))),
//!     loss: Mse,
//!     search: Some(Search(
//!         proposers: [Plugin(name: "powers", settings: {"max": "5"})],
//!         calibration: Calibration(steps: 200, optimizer: Adam(lr: 0.05)),
//!         success: HeldOutR2(0.999),
//!     )),
//! )"#).unwrap();
//! let plugins = PluginsBuilder::new().plugin(&PowersPlugin).build().unwrap();
//! let options = SearchOptions { plugins, ..SearchOptions::default() };
//! let report = Search::new(&scene, std::path::Path::new("."), &options).unwrap().run(|_| {});
//! assert_eq!(report.summary.calibrations, 5 * 4);
//! assert_eq!(report.summary.stopped_by, "proposers");
//! assert_eq!(report.successes[0].src, "(* a (expt x 3))");
//! ```

pub mod command;
pub mod evolve;
pub mod mutate;
pub mod stream;

use crate::record::Record;
use ndvm_systems::plugin::PluginsBuilder;
use ndvm_systems::population::template::Template;
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// One proposed candidate: a program and its parameter names (the shared stream format).
#[derive(Clone, Debug, PartialEq)]
pub struct Proposal {
    pub src: String,
    pub params: Vec<String>,
    /// A label for tables and logs (a stream line `file:12`, a proposer's own tag).
    pub name: String,
}

/// What every proposer is told when the search starts.
#[derive(Clone, Debug)]
pub struct Context {
    /// The data columns a candidate reads (its variables), in order.
    pub inputs: Vec<String>,
    /// Names bound the same in every lane (a scene's `inputs`).
    pub shared: Vec<String>,
    /// The scene's parameter names (a hint; every proposal names its own).
    pub params: Vec<String>,
    /// The success criterion, e.g. `held-out R² > 0.9`.
    pub success: String,
    /// The Pareto front's BIC penalty and loss floor in a least-squares search
    /// ([`crate::front`]); `None` where the front compares plain losses.
    pub front_penalty: Option<crate::front::Penalty>,
    /// This proposer's seed (from the search's seed and its position).
    pub seed: u64,
    /// The scene file's folder (relative paths in settings are relative to it).
    pub base: PathBuf,
    /// In a sharded search's later epochs: the best programs every shard found so far, best
    /// first ([`crate::shards`]); a proposer may start from them (Evolve does).
    pub migrants: Vec<String>,
    /// The search's template: then every proposal is a filling of its holes, `(holes E1 E2 …)`
    /// ([`ndvm_systems::population::template`]).
    pub template: Option<Arc<Template>>,
}

/// Why a proposer stopped working.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("proposer `{proposer}`: {message}")]
pub struct ProposerError {
    pub proposer: String,
    pub message: String,
}

/// Where proposers put their warnings (a skipped line, a garbage answer).
#[derive(Debug, Default)]
pub struct Notes {
    pub warnings: Vec<String>,
}

impl Notes {
    pub fn warn(&mut self, message: impl Into<String>) {
        self.warnings.push(message.into());
    }
}

/// A source of candidates.
pub trait Proposer: Send {
    /// The name messages and the results use.
    fn name(&self) -> &str;

    /// Up to about `n` new candidates (more are kept for later, fewer are fine); none means
    /// this proposer has nothing more to give.
    fn propose(&mut self, n: usize, notes: &mut Notes) -> Result<Vec<Proposal>, ProposerError>;

    /// Every finished calibration (of every proposer's candidates), in log order.
    fn observe(&mut self, _done: &[Record], _notes: &mut Notes) -> Result<(), ProposerError> {
        Ok(())
    }

    /// The search has ended (budget, interrupt or exhaustion): release what it holds.
    fn finish(&mut self) {}

    /// A sharded search's later epoch: go on after the first `taken` proposals, which earlier
    /// epochs of this shard calibrated (a stream resumes there; others ignore it).
    fn resume(&mut self, _taken: u64) {}
}

/// Settings of a plugin proposer, as the scene writes them.
pub type Settings = BTreeMap<String, String>;

type Factory = Arc<dyn Fn(&Settings, &Context) -> Result<Box<dyn Proposer>, String> + Send + Sync>;

/// A plugin's way to add a proposer: `plugins.proposer("name", make)` on the fit's
/// [`PluginsBuilder`] (the registry is one of its extensions).
pub trait ProposerPlugins {
    /// Registers a search proposer: a search scene's `Plugin(name: "name", settings: {…})`
    /// builds it with `make`.
    fn proposer(
        &mut self,
        name: &str,
        make: impl Fn(&Settings, &Context) -> Result<Box<dyn Proposer>, String> + Send + Sync + 'static,
    ) -> &mut Self;
}

impl ProposerPlugins for PluginsBuilder {
    fn proposer(
        &mut self,
        name: &str,
        make: impl Fn(&Settings, &Context) -> Result<Box<dyn Proposer>, String> + Send + Sync + 'static,
    ) -> &mut Self {
        self.extension::<ProposerRegistry>().register(name, make);
        self
    }
}

/// Proposers that plugins add, by name.
#[derive(Clone, Default)]
pub struct ProposerRegistry {
    factories: BTreeMap<String, Factory>,
}

impl fmt::Debug for ProposerRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.factories.keys()).finish()
    }
}

impl ProposerRegistry {
    /// Makes `Plugin(name: "name", settings: {…})` in a scene build a proposer with `make`.
    pub fn register(
        &mut self,
        name: &str,
        make: impl Fn(&Settings, &Context) -> Result<Box<dyn Proposer>, String> + Send + Sync + 'static,
    ) {
        self.factories.insert(name.to_string(), Arc::new(make));
    }

    /// Builds the proposer registered as `name`.
    pub fn build(
        &self,
        name: &str,
        settings: &Settings,
        context: &Context,
    ) -> Result<Box<dyn Proposer>, String> {
        match self.factories.get(name) {
            Some(make) => make(settings, context),
            None => {
                let known: Vec<&str> = self.factories.keys().map(String::as_str).collect();
                Err(format!(
                    "no plugin proposer `{name}` (registered: {})",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ))
            }
        }
    }
}

/// A fixed list of candidates, given once: a search scene's own `candidates`.
#[derive(Debug)]
pub struct Seeds {
    pub(crate) list: std::collections::VecDeque<Proposal>,
}

impl Proposer for Seeds {
    fn name(&self) -> &str {
        "seeds"
    }

    fn propose(&mut self, n: usize, _: &mut Notes) -> Result<Vec<Proposal>, ProposerError> {
        let k = n.max(1).min(self.list.len());
        Ok(self.list.drain(..k).collect())
    }

    fn resume(&mut self, taken: u64) {
        let k = usize::try_from(taken).map_or(self.list.len(), |t| t.min(self.list.len()));
        self.list.drain(..k);
    }
}
