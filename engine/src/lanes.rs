//! Active lane sets.
//!
//! A walk starts with every lane active. The tape records, for each node, the id of the lane set
//! that was active, and the backward pass touches only those lanes, so a value computed in a lane
//! that had finished never reaches a gradient. Set 0 is always "every lane"; the divergence
//! machinery (per-lane branches and loop exits) adds subsets.

/// The id of the set of all lanes.
pub const ALL: u32 = 0;

#[derive(Debug, Default)]
pub struct LaneSets {
    /// Subsets by id − 1, each a sorted list of lane indices.
    subsets: Vec<Vec<u32>>,
}

impl LaneSets {
    pub fn reset(&mut self) {
        self.subsets.clear();
    }

    /// Registers a subset and returns its id.
    pub fn add(&mut self, lanes: Vec<u32>) -> u32 {
        self.subsets.push(lanes);
        self.subsets.len() as u32
    }

    /// The lanes of a subset (`None` for [`ALL`]).
    pub fn get(&self, id: u32) -> Option<&[u32]> {
        if id == ALL {
            None
        } else {
            self.subsets.get(id as usize - 1).map(Vec::as_slice)
        }
    }
}
