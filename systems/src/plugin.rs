//! Plugins: custom primitives (and, where useful, extra systems) added to the engine.
//!
//! A [`Plugin`] registers what it brings with an [`EngineBuilder`]: numeric primitives (the
//! engine's [`Primitive`] trait: name, arity, forward over lanes, VJP), schedule hooks that
//! add systems around the stages (`.after(Stage::Optimize)`, say), and search proposers
//! ([`crate::search::Proposer`], named in a search scene as `Plugin(name: …)`). The built [`Engine`] goes
//! into [`crate::fit::FitOptions::engine`]; every candidate of the fit is decoded against its
//! primitives. Check a primitive's VJP with [`check_primitive`] before fitting with it.
//!
//! ```
//! use ndvm_systems::plugin::{EngineBuilder, Plugin};
//! use ndvm_systems::prelude::*;
//! use ndvm_engine::extension::Primitive;
//!
//! #[derive(Debug)]
//! struct Softplus;
//! impl Primitive for Softplus {
//!     fn name(&self) -> &str { "softplus" }
//!     fn arity(&self) -> usize { 1 }
//!     fn forward(&self, args: &[&[f64]], out: &mut [f64]) {
//!         for (o, &x) in out.iter_mut().zip(args[0]) { *o = x.max(0.0) + (-x.abs()).exp().ln_1p(); }
//!     }
//!     fn vjp(&self, args: &[&[f64]], _: &[f64], g: &[f64], grads: &mut [Vec<f64>]) {
//!         for ((d, &x), &g) in grads[0].iter_mut().zip(args[0]).zip(g) { *d = g / (1.0 + (-x).exp()); }
//!     }
//! }
//!
//! struct Activations;
//! impl Plugin for Activations {
//!     fn build(&self, engine: &mut EngineBuilder) {
//!         engine.primitive(Softplus);
//!     }
//! }
//!
//! let engine = EngineBuilder::new().plugin(&Activations).build().unwrap();
//! let scene = Scene::from_ron(r#"Scene(
//!     candidates: [Inline(name: "soft", src: "(square (- (softplus a) 2))")],
//!     parameters: Parameters(names: ["a"], init: {"a": 0.0}),
//!     optimizer: Adam(lr: 0.2),
//!     steps: 300,
//! )"#).unwrap();
//! let options = FitOptions { engine, ..FitOptions::default() };
//! let report = Fit::new(&scene, std::path::Path::new("."), &options).unwrap().run(|_| {});
//! // softplus(a) = 2 at a = ln(e² − 1)
//! assert!((report.candidates[0].params["a"] - (2f64.exp() - 1.0).ln()).abs() < 1e-3);
//! ```

use crate::search::proposer::{Context, Proposer, ProposerRegistry, Settings};
use bevy_ecs::schedule::Schedule;
pub use ndvm_engine::extension::{CheckError, Primitive, Registry, RegistryError, check_primitive};
use std::sync::Arc;

/// Something that adds primitives or systems to the engine.
pub trait Plugin {
    fn build(&self, engine: &mut EngineBuilder);
}

type Hook = Arc<dyn Fn(&mut Schedule) + Send + Sync>;

/// Collects what plugins register; [`EngineBuilder::build`] checks it.
#[derive(Default)]
pub struct EngineBuilder {
    primitives: Registry,
    hooks: Vec<Hook>,
    proposers: ProposerRegistry,
    error: Option<RegistryError>,
}

impl std::fmt::Debug for EngineBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineBuilder")
            .field("primitives", &self.primitives.signature())
            .field("hooks", &self.hooks.len())
            .field("proposers", &self.proposers)
            .finish()
    }
}

impl EngineBuilder {
    pub fn new() -> Self {
        EngineBuilder::default()
    }

    /// Registers a numeric primitive (a name clash is reported by [`EngineBuilder::build`]).
    pub fn primitive(&mut self, p: impl Primitive + 'static) -> &mut Self {
        if let Err(e) = self.primitives.add(Arc::new(p))
            && self.error.is_none()
        {
            self.error = Some(e);
        }
        self
    }

    /// Adds systems to the stage schedule, e.g.
    /// `engine.schedule(|s| { s.add_systems(log_losses.after(Stage::Optimize)); })`.
    pub fn schedule(&mut self, hook: impl Fn(&mut Schedule) + Send + Sync + 'static) -> &mut Self {
        self.hooks.push(Arc::new(hook));
        self
    }

    /// Registers a search proposer: a search scene's `Plugin(name: "name", settings: {…})`
    /// builds it with `make` (see [`crate::search::proposer`]).
    pub fn proposer(
        &mut self,
        name: &str,
        make: impl Fn(&Settings, &Context) -> Result<Box<dyn Proposer>, String> + Send + Sync + 'static,
    ) -> &mut Self {
        self.proposers.register(name, make);
        self
    }

    /// Lets `plugin` register what it brings.
    pub fn plugin(&mut self, plugin: &dyn Plugin) -> &mut Self {
        plugin.build(self);
        self
    }

    /// The engine, or the first registration error.
    pub fn build(&mut self) -> Result<Engine, RegistryError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        Ok(Engine {
            primitives: std::mem::take(&mut self.primitives),
            hooks: std::mem::take(&mut self.hooks),
            proposers: std::mem::take(&mut self.proposers),
        })
    }
}

/// Registered primitives, schedule hooks and proposers, ready for fits and searches.
#[derive(Clone, Default)]
pub struct Engine {
    pub primitives: Registry,
    hooks: Vec<Hook>,
    pub proposers: ProposerRegistry,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("primitives", &self.primitives.signature())
            .field("hooks", &self.hooks.len())
            .field("proposers", &self.proposers)
            .finish()
    }
}

impl Engine {
    /// Whether a plugin added systems to the schedule.
    pub fn has_hooks(&self) -> bool {
        !self.hooks.is_empty()
    }

    /// Runs every schedule hook on `schedule`.
    pub fn extend(&self, schedule: &mut Schedule) {
        for hook in &self.hooks {
            hook(schedule);
        }
    }
}
