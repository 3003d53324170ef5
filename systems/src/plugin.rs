//! Plugins: custom primitives (and, where useful, extra systems) added to the engine.
//!
//! A [`Plugin`] registers what it brings with a [`PluginsBuilder`]: numeric primitives (the
//! engine's [`Primitive`] trait: name, arity, forward over lanes, VJP), schedule hooks that
//! add systems around the stages (`.after(Stage::Optimize)`, say), and *extensions*: a value of
//! any type that a crate above this one keeps for itself, one per type — the search's proposers
//! (`ndvm_search`'s `ProposerRegistry`, named in a search scene as `Plugin(name: …)`) are one.
//! The built [`Plugins`] go into [`crate::fit::FitOptions::plugins`]; every candidate of the fit
//! is decoded against their primitives. Check a primitive's VJP with [`check_primitive`] before
//! fitting with it.
//!
//! ```
//! use ndvm_systems::plugin::{Plugin, PluginsBuilder};
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
//!     fn build(&self, plugins: &mut PluginsBuilder) {
//!         plugins.primitive(Softplus);
//!     }
//! }
//!
//! let plugins = PluginsBuilder::new().plugin(&Activations).build().unwrap();
//! let scene = Scene::from_ron(r#"Scene(
//!     candidates: [Inline(name: "soft", src: "(square (- (softplus a) 2))")],
//!     parameters: Parameters(names: ["a"], init: {"a": 0.0}),
//!     optimizer: Adam(lr: 0.2),
//!     steps: 300,
//! )"#).unwrap();
//! let options = FitOptions { plugins, ..FitOptions::default() };
//! let report = Fit::new(&scene, std::path::Path::new("."), &options).unwrap().run(|_| {});
//! // softplus(a) = 2 at a = ln(e² − 1)
//! assert!((report.candidates[0].params["a"] - (2f64.exp() - 1.0).ln()).abs() < 1e-3);
//! ```

use bevy_ecs::schedule::Schedule;
pub use ndvm_engine::extension::{CheckError, Primitive, Registry, RegistryError, check_primitive};
use std::any::{Any, TypeId};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Something that adds primitives, systems or extensions to the engine.
pub trait Plugin {
    fn build(&self, plugins: &mut PluginsBuilder);
}

type Hook = Arc<dyn Fn(&mut Schedule) + Send + Sync>;

/// An extension: any value a crate above this one keeps among the plugins, one per type.
type Extension = Arc<dyn Any + Send + Sync>;

/// Collects what plugins register; [`PluginsBuilder::build`] checks it.
#[derive(Debug, Default)]
pub struct PluginsBuilder {
    plugins: Plugins,
    error: Option<RegistryError>,
}

impl PluginsBuilder {
    pub fn new() -> Self {
        PluginsBuilder::default()
    }

    /// Registers a numeric primitive (a name clash is reported by [`PluginsBuilder::build`]).
    pub fn primitive(&mut self, p: impl Primitive + 'static) -> &mut Self {
        if let Err(e) = self.plugins.primitives.add(Arc::new(p))
            && self.error.is_none()
        {
            self.error = Some(e);
        }
        self
    }

    /// Adds systems to the stage schedule, e.g.
    /// `plugins.schedule(|s| { s.add_systems(log_losses.after(Stage::Optimize)); })`.
    pub fn schedule(&mut self, hook: impl Fn(&mut Schedule) + Send + Sync + 'static) -> &mut Self {
        self.plugins.hooks.push(Arc::new(hook));
        self
    }

    /// The extension of type `T`, made with `T::default()` on first use (a search's proposer
    /// registry, say: `ndvm_search` adds a `proposer` method that registers through it).
    pub fn extension<T: Any + Default + Send + Sync>(&mut self) -> &mut T {
        let entry = (self.plugins.extensions)
            .entry(TypeId::of::<T>())
            .or_insert_with(|| (std::any::type_name::<T>(), Arc::new(T::default())));
        Arc::get_mut(&mut entry.1)
            .and_then(|e| e.downcast_mut::<T>())
            .expect("keyed by its type, and only the builder holds it")
    }

    /// Lets `plugin` register what it brings.
    pub fn plugin(&mut self, plugin: &dyn Plugin) -> &mut Self {
        plugin.build(self);
        self
    }

    /// The plugins, or the first registration error.
    pub fn build(&mut self) -> Result<Plugins, RegistryError> {
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(std::mem::take(&mut self.plugins)),
        }
    }
}

/// Registered primitives, schedule hooks and extensions, ready for fits and searches.
#[derive(Clone, Default)]
pub struct Plugins {
    pub primitives: Registry,
    hooks: Vec<Hook>,
    extensions: BTreeMap<TypeId, (&'static str, Extension)>,
}

impl std::fmt::Debug for Plugins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugins")
            .field("primitives", &self.primitives.signature())
            .field("hooks", &self.hooks.len())
            .field(
                "extensions",
                &self.extensions.values().map(|e| e.0).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Plugins {
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

    /// The extension of type `T`, if a plugin made one.
    pub fn extension<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.extensions
            .get(&TypeId::of::<T>())
            .and_then(|e| e.1.downcast_ref::<T>())
    }
}
