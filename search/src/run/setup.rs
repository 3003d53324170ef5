//! Setting a search up: the scene's own candidates, the Evolve grammar's check, and the
//! proposers of the scene, each started with a seed of its own.

use crate::proposers::{self, Context, Notes, Proposal, Proposer, ProposerRegistry};
use crate::proposers::{command, evolve, stream};
use crate::run::seed::mix;
use crate::run::{SearchError, SearchOptions, Slot};
use crate::tally::ProposerTally;
use ndvm_components::input_file::TEXT_LIMIT;
use ndvm_components::scene::search::{ProposerSpec, Search as Spec, Success};
use ndvm_components::scene::{Candidates, Scene};
use ndvm_systems::plugin::Plugins;
use ndvm_systems::population::template::Template;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Evolve's operators must be primitives the engine knows (with the plugins').
pub(super) fn check_grammar(spec: &Spec, plugins: &Plugins) -> Result<(), SearchError> {
    for p in &spec.proposers {
        let Some(e) = p.evolve() else { continue };
        let forms = e
            .unary
            .iter()
            .map(|u| (u, format!("({u} x)")))
            .chain(e.binary.iter().map(|b| (b, format!("({b} x x)"))));
        for (name, src) in forms {
            ndvm_engine::Program::with_primitives(&src, &["x"], &plugins.primitives).map_err(
                |err| {
                    SearchError::Setting(format!(
                        "`Evolve`: `{name}` cannot be used as an operator: {}",
                        err.message
                    ))
                },
            )?;
        }
    }
    Ok(())
}

/// Starts every proposer of the scene, in order, each with its own seed.
// Each argument is one thing the proposers are told; a struct for one call would only rename them.
#[allow(clippy::too_many_arguments)]
pub(super) fn start_proposers(
    scene: &Scene,
    spec: &Spec,
    base: &Path,
    inputs: &[String],
    options: &SearchOptions,
    seeds: Vec<Proposal>,
    front_penalty: Option<crate::front::Penalty>,
    template: Option<&Arc<Template>>,
    notes: &mut Notes,
) -> Result<Vec<Slot>, SearchError> {
    let success = match spec.success {
        Success::HeldOutR2(t) => format!("held-out R² > {t}"),
        Success::TrainLoss(t) => format!("training loss < {t}"),
    };
    let mut slots = Vec::new();
    let mut push = |p: Box<dyn Proposer>| {
        slots.push(Slot {
            tally: ProposerTally {
                name: p.name().to_string(),
                ..ProposerTally::default()
            },
            proposer: p,
            done: false,
            failed: false,
        });
    };
    let shard = options.shard.as_ref();
    // The scene's own candidates come first, once (a shard takes its share of them, and every
    // shard has the slot, so that the proposers line up when shards merge).
    if !seeds.is_empty() {
        let list = match shard {
            Some(t) => crate::shards::task::deal(seeds, t.shard, t.shards),
            None => seeds,
        };
        push(Box::new(proposers::Seeds { list: list.into() }));
    }
    for (i, p) in spec.proposers.iter().enumerate() {
        let context = Context {
            inputs: inputs.to_vec(),
            shared: scene.inputs.keys().cloned().collect(),
            params: scene.parameters.names.clone(),
            success: success.clone(),
            front_penalty,
            seed: mix(spec.seed, 1 << 32 | i as u64),
            base: base.to_path_buf(),
            migrants: shard.map(|t| t.migrants.clone()).unwrap_or_default(),
            template: template.cloned(),
        };
        let p: Box<dyn Proposer> = match p {
            ProposerSpec::Stream { path, cycle, take } => {
                let mut s = stream::Stream::open(&base.join(path), path, *take, *cycle, notes)
                    .map_err(SearchError::Setting)?;
                if let Some(t) = shard {
                    s.keep_share(t.shard, t.shards);
                }
                Box::new(s)
            }
            ProposerSpec::Command {
                argv,
                name,
                timeout_seconds,
                batch,
            } => Box::new(command::CommandProposer::start(
                argv,
                name.as_deref(),
                *timeout_seconds,
                *batch,
                &context,
            )?),
            ProposerSpec::Evolve { .. } => {
                let settings = p.evolve().unwrap_or_default();
                Box::new(evolve::Evolve::new(&settings, &context).map_err(SearchError::Setting)?)
            }
            ProposerSpec::Plugin { name, settings } => options
                .plugins
                .extension::<ProposerRegistry>()
                .unwrap_or(&ProposerRegistry::default())
                .build(name, settings, &context)
                .map_err(SearchError::Setting)?,
        };
        push(p);
    }
    // A shard's later epoch goes on where its earlier ones stopped.
    if let Some(t) = shard {
        for (slot, &taken) in slots.iter_mut().zip(&t.resume) {
            slot.proposer.resume(taken);
        }
    }
    Ok(slots)
}

/// A search proposes and mutates dialect programs: a bytecode seed cannot take part.
fn bytecode_seed(name: &str) -> SearchError {
    SearchError::Setting(format!(
        "candidate `{name}` is bytecode: a search mutates dialect programs; fit bytecode \
         candidates with `ndvm fit`"
    ))
}

/// The scene's own `candidates`, as proposals of the seeds proposer.
pub(super) fn scene_seeds(
    scene: &Scene,
    base: &Path,
    notes: &mut Notes,
) -> Result<Vec<Proposal>, SearchError> {
    let mut out = Vec::new();
    for c in &scene.candidates {
        match c {
            Candidates::Inline {
                name,
                src,
                bytecode,
                parameters,
                data,
            } => {
                if *bytecode {
                    return Err(bytecode_seed(name));
                }
                if data.is_some() {
                    return Err(SearchError::Setting(format!(
                        "candidate `{name}`: a search calibrates every candidate on the scene's \
                         data; remove its own `data`"
                    )));
                }
                out.push(Proposal {
                    src: src.clone(),
                    params: parameters
                        .as_ref()
                        .map_or(&scene.parameters.names, |p| &p.names)
                        .clone(),
                    name: name.clone(),
                });
            }
            Candidates::File(path) => {
                if ndvm_bytecode::Form::of(path, false).is_bytecode() {
                    return Err(bytecode_seed(path));
                }
                let src = ndvm_components::input_file::read(&base.join(path), TEXT_LIMIT)
                    .map_err(|e| SearchError::Setting(format!("{path}: {e}")))?;
                out.push(Proposal {
                    src,
                    params: scene.parameters.names.clone(),
                    name: PathBuf::from(path)
                        .file_stem()
                        .map_or_else(|| path.clone(), |s| s.to_string_lossy().into_owned()),
                });
            }
            Candidates::Stream { path, take } => {
                let mut s = stream::Stream::open(&base.join(path), path, *take, false, notes)
                    .map_err(SearchError::Setting)?;
                let n = s.len();
                out.extend(s.propose(n, notes).unwrap_or_default());
            }
        }
    }
    Ok(out)
}
