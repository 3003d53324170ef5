//! Why a search could not start.

use crate::proposers::ProposerError;
use ndvm_systems::fit::FitError;
use ndvm_systems::population::PopulationError;

/// A search that could not start.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("not a search scene: it has no `search:` section")]
    NotASearch,
    #[error("{0}")]
    Setting(String),
    #[error(transparent)]
    Population(#[from] PopulationError),
    #[error(transparent)]
    Fit(#[from] FitError),
    #[error(transparent)]
    Proposer(#[from] ProposerError),
}
