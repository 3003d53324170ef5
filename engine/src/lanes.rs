//! Active lane sets.
//!
//! A walk starts with every lane active. A test that splits the active lanes makes two subsets;
//! the tape records, for each node, the set that was active, and both the kernels and the
//! backward pass touch only those lanes — so work is proportional to the active lanes, and a
//! value computed in a lane that had finished never reaches a gradient. Set 0 is always "every
//! lane". A subset is kept both as a sorted lane list and as maximal runs of consecutive lanes,
//! over which the vectorized kernels run on sub-slices.

/// The id of the set of all lanes.
pub const ALL: u32 = 0;

/// How a kernel visits a lane set (see [`LaneSets::layout`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout<'a> {
    All,
    /// Runs `(first, len)` of consecutive lanes.
    Runs(&'a [(u32, u32)]),
    /// Individual lanes.
    Scattered(&'a [u32]),
}

impl Layout<'_> {
    /// Calls `f(start, end)` for every range of consecutive lanes (a scattered lane is a range
    /// of one), for kernels that work on lane ranges.
    pub fn for_ranges(self, lanes: usize, mut f: impl FnMut(usize, usize)) {
        match self {
            Layout::All => f(0, lanes),
            Layout::Runs(runs) => runs
                .iter()
                .for_each(|&(s, n)| f(s as usize, (s + n) as usize)),
            Layout::Scattered(ls) => ls.iter().for_each(|&l| f(l as usize, l as usize + 1)),
        }
    }
}

/// One subset: its sorted lanes and their runs `(first, len)`.
#[derive(Debug, Default)]
struct Subset {
    lanes: Vec<u32>,
    runs: Vec<(u32, u32)>,
}

#[derive(Debug, Default)]
pub struct LaneSets {
    /// Subsets by id − 1.
    subsets: Vec<Subset>,
}

impl LaneSets {
    pub fn reset(&mut self) {
        self.subsets.clear();
    }

    /// The number of subsets (ids `1..=count`).
    pub fn count(&self) -> usize {
        self.subsets.len()
    }

    /// Whether no subset exists (every node of the walk ran over all lanes).
    pub fn is_empty(&self) -> bool {
        self.subsets.is_empty()
    }

    /// Registers a subset (sorted lane indices) and returns its id.
    pub fn add(&mut self, lanes: Vec<u32>) -> u32 {
        let mut runs: Vec<(u32, u32)> = Vec::new();
        for &l in &lanes {
            match runs.last_mut() {
                Some((first, len)) if *first + *len == l => *len += 1,
                _ => runs.push((l, 1)),
            }
        }
        self.subsets.push(Subset { lanes, runs });
        self.subsets.len() as u32
    }

    /// The lanes of a subset (`None` for [`ALL`]).
    pub fn get(&self, id: u32) -> Option<&[u32]> {
        if id == ALL {
            None
        } else {
            self.subsets
                .get(id as usize - 1)
                .map(|s| s.lanes.as_slice())
        }
    }

    /// How kernels should visit the lanes of set `id`: all of them, run by run when the runs are
    /// long enough for vectorized sub-slices (8 lanes on average), or lane by lane.
    pub fn layout(&self, id: u32) -> Layout<'_> {
        match self.subsets.get((id as usize).wrapping_sub(1)) {
            None => Layout::All,
            Some(s) if s.runs.len() * 8 <= s.lanes.len() => Layout::Runs(&s.runs),
            Some(s) => Layout::Scattered(&s.lanes),
        }
    }

    /// The runs of consecutive lanes of a subset (`None` for [`ALL`]).
    pub fn runs(&self, id: u32) -> Option<&[(u32, u32)]> {
        if id == ALL {
            None
        } else {
            self.subsets.get(id as usize - 1).map(|s| s.runs.as_slice())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_cover_the_subset() {
        let mut s = LaneSets::default();
        let id = s.add(vec![0, 1, 2, 5, 7, 8]);
        assert_eq!(s.get(id), Some(&[0, 1, 2, 5, 7, 8][..]));
        assert_eq!(s.runs(id), Some(&[(0, 3), (5, 1), (7, 2)][..]));
        assert_eq!(s.runs(ALL), None);
        assert_eq!(s.layout(ALL), Layout::All);
        assert_eq!(s.layout(id), Layout::Scattered(&[0, 1, 2, 5, 7, 8]));
        let block = s.add((0..64).collect());
        assert_eq!(s.layout(block), Layout::Runs(&[(0, 64)]));
    }
}
