//! What a search keeps of its calibrations: a [`Tally`] of counts, the first success, the
//! Pareto front and the best calibration of the best `keep` skeletons (and of the best `keep`
//! successful ones) — so memory does not grow with the number of calibrations.

use crate::front::{Front, Penalty};
use crate::record::{Record, key, size};
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// The best record per skeleton, for the `keep` best skeletons. Exact: a skeleton evicted
/// from the top can come back only with a better record than any it had.
#[derive(Clone, Debug)]
pub struct TopSkeletons {
    keep: usize,
    by_r2: bool,
    best: HashMap<String, Record>,
    /// The skeleton of the worst kept record, once the top is full (`None`: not known). Most
    /// offers lose to it, so it is kept rather than looked for among `keep` records each time.
    worst: Option<String>,
}

impl TopSkeletons {
    pub fn new(keep: usize, by_r2: bool) -> Self {
        TopSkeletons {
            keep,
            by_r2,
            best: HashMap::new(),
            worst: None,
        }
    }

    pub fn offer(&mut self, r: &Record) {
        if self.keep == 0 {
            return;
        }
        let better = |a: &Record, b: &Record| a.score(self.by_r2) > b.score(self.by_r2);
        if let Some(old) = self.best.get_mut(&r.skeleton) {
            if better(r, old) {
                *old = r.clone();
                // The worst record got better: another may be the worst now.
                if self.worst.as_deref() == Some(r.skeleton.as_str()) {
                    self.worst = None;
                }
            }
            return;
        }
        if self.best.len() < self.keep {
            self.best.insert(r.skeleton.clone(), r.clone());
            return;
        }
        let by_r2 = self.by_r2;
        let worst = match self.worst.take() {
            Some(w) => w,
            None => {
                let w = self.best.values().min_by(|a, b| rank(a, b, by_r2));
                w.expect("a full top").skeleton.clone()
            }
        };
        if better(r, &self.best[&worst]) {
            self.best.remove(&worst);
            self.best.insert(r.skeleton.clone(), r.clone());
        } else {
            self.worst = Some(worst);
        }
    }

    /// Best first (ties by log position).
    pub fn ranked(&self) -> Vec<Record> {
        let mut v: Vec<Record> = self.best.values().cloned().collect();
        v.sort_by(|a, b| rank(b, a, self.by_r2));
        v
    }
}

/// `a` against `b`: by score, then the earlier calibration counts as better.
fn rank(a: &Record, b: &Record, by_r2: bool) -> std::cmp::Ordering {
    a.score(by_r2)
        .total_cmp(&b.score(by_r2))
        .then(b.calibration.cmp(&a.calibration))
}

/// Per-proposer counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct ProposerTally {
    pub name: String,
    /// Candidates it proposed that were calibrated (or failed).
    pub candidates: u64,
    pub calibrations: u64,
    pub successes: u64,
    /// Why it stopped early, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What a search keeps of its calibrations.
#[derive(Clone, Debug)]
pub struct Tally {
    pub calibrations: u64,
    pub failed: u64,
    pub successes: u64,
    /// The first successful calibration.
    pub first_success: Option<Record>,
    /// Distinct skeletons with at least one success.
    pub successful_skeletons: HashSet<u64>,
    /// The best held-out R² (or the lowest loss) so far.
    pub best: Option<Record>,
    pub top: TopSkeletons,
    pub top_successes: TopSkeletons,
    /// The smallest successful program (ties: the better score, then the earlier).
    pub simplest_success: Option<Record>,
    /// The best training loss at each complexity ([`crate::front`]).
    pub front: Front,
}

impl Tally {
    /// A tally keeping the best `keep` skeletons, ranking by held-out R² (`by_r2`) or loss, its
    /// front adjusted by `penalty` ([`crate::front::penalty`]).
    pub fn new(keep: usize, by_r2: bool, penalty: Option<Penalty>) -> Self {
        Tally {
            calibrations: 0,
            failed: 0,
            successes: 0,
            first_success: None,
            successful_skeletons: HashSet::new(),
            best: None,
            top: TopSkeletons::new(keep, by_r2),
            top_successes: TopSkeletons::new(keep, by_r2),
            simplest_success: None,
            front: Front::new(penalty),
        }
    }

    /// The best figure so far: the held-out R² when ranking by it, else the training loss.
    pub fn best_value(&self) -> Option<f64> {
        let r = self.best.as_ref()?;
        if self.top.by_r2 {
            r.held_out_r2
        } else {
            Some(r.train_loss)
        }
    }

    /// Where the search stands, `elapsed_s` into it: a point of the timeline.
    pub fn point(&self, elapsed_s: f64) -> crate::timeline::Point {
        crate::timeline::Point {
            elapsed_s,
            calibrations: self.calibrations,
            best: self.best_value().unwrap_or(f64::NAN),
            successes: self.successes,
            distinct_successes: self.successful_skeletons.len() as u64,
        }
    }

    /// Counts one record, marking whether it joined the front; returns whether the best so far
    /// improved.
    pub fn add(&mut self, r: &mut Record) -> bool {
        r.front = self.front.offer(r);
        self.calibrations += 1;
        if matches!(r.status, "failed" | "non-finite") {
            self.failed += 1;
        }
        if r.success {
            self.successes += 1;
            self.successful_skeletons.insert(key(&r.skeleton));
            if self.first_success.is_none() {
                self.first_success = Some(r.clone());
            }
            self.top_successes.offer(r);
            let by_r2 = self.top.by_r2;
            let simpler = self.simplest_success.as_ref().is_none_or(|s| {
                let (a, b) = (size(&r.skeleton), size(&s.skeleton));
                a < b || (a == b && r.score(by_r2) > s.score(by_r2))
            });
            if simpler {
                self.simplest_success = Some(r.clone());
            }
        }
        self.top.offer(r);
        let by_r2 = self.top.by_r2;
        let improved = self
            .best
            .as_ref()
            .is_none_or(|b| r.score(by_r2) > b.score(by_r2));
        if improved && r.score(by_r2) > f64::NEG_INFINITY {
            self.best = Some(r.clone());
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(i: u64, skeleton: &str, r2: f64) -> Record {
        let mut r = Record::sample(i, skeleton, skeleton, 1.0 - r2);
        r.held_out_r2 = Some(r2);
        r.success = r2 > 0.9;
        r
    }

    #[test]
    fn the_top_keeps_each_skeletons_best_among_the_best_skeletons() {
        let mut top = TopSkeletons::new(2, true);
        for (i, (s, r2)) in [
            ("a", 0.5),
            ("b", 0.7),
            ("a", 0.6),
            ("c", 0.65),
            ("b", 0.2),
            ("d", 0.1),
            ("a", 0.99),
        ]
        .into_iter()
        .enumerate()
        {
            top.offer(&rec(i as u64, s, r2));
        }
        let kept: Vec<(String, Option<f64>)> = top
            .ranked()
            .into_iter()
            .map(|r| (r.skeleton, r.held_out_r2))
            .collect();
        assert_eq!(
            kept,
            vec![("a".to_string(), Some(0.99)), ("b".to_string(), Some(0.7))]
        );
    }

    #[test]
    fn the_top_matches_a_search_of_every_kept_record_for_the_worst() {
        use rand::{Rng, SeedableRng};
        // What the top did before it kept its worst: look for it at every offer.
        fn naive(best: &mut HashMap<String, Record>, keep: usize, r: &Record) {
            let better = |a: &Record, b: &Record| a.score(true) > b.score(true);
            if let Some(old) = best.get_mut(&r.skeleton) {
                if better(r, old) {
                    *old = r.clone();
                }
                return;
            }
            if best.len() < keep {
                best.insert(r.skeleton.clone(), r.clone());
                return;
            }
            let worst = best.values().min_by(|a, b| rank(a, b, true)).expect("full");
            let w = worst.skeleton.clone();
            if better(r, &best[&w]) {
                best.remove(&w);
                best.insert(r.skeleton.clone(), r.clone());
            }
        }
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for keep in [1, 3, 10] {
            let mut top = TopSkeletons::new(keep, true);
            let mut reference = HashMap::new();
            for i in 0..3000 {
                // Few skeletons and coarse scores: updates, ties and evictions all happen.
                let skeleton = format!("s{}", rng.random_range(0..25));
                let r2 = f64::from(rng.random_range(0..20)) / 20.0;
                let r = rec(i, &skeleton, r2);
                top.offer(&r);
                naive(&mut reference, keep, &r);
                assert_eq!(top.best, reference, "keep {keep}, offer {i}");
            }
        }
    }

    #[test]
    fn the_tally_counts_successes_and_distinct_skeletons() {
        let mut t = Tally::new(10, true, None);
        assert!(t.add(&mut rec(0, "a", 0.5)));
        assert!(t.add(&mut rec(1, "b", 0.95)));
        assert!(!t.add(&mut rec(2, "b", 0.93)));
        let mut nan = rec(3, "c", f64::NAN);
        nan.status = "failed";
        assert!(!t.add(&mut nan));
        assert_eq!((t.calibrations, t.successes, t.failed), (4, 2, 1));
        assert_eq!(t.successful_skeletons.len(), 1);
        assert_eq!(t.first_success.as_ref().map(|r| r.calibration), Some(1));
        assert_eq!(t.best.as_ref().map(|r| r.calibration), Some(1));
    }

    #[test]
    fn the_simplest_success_is_the_smallest_then_the_best_fitting() {
        let mut t = Tally::new(10, true, None);
        t.add(&mut rec(0, "(* (+ P x) x)", 0.5));
        assert!(t.simplest_success.is_none());
        t.add(&mut rec(1, "(+ (* P x) P)", 0.97));
        t.add(&mut rec(2, "(* P x)", 0.91));
        t.add(&mut rec(3, "(* P y)", 0.90));
        t.add(&mut rec(4, "(* P z)", 0.905));
        t.add(&mut rec(5, "(* P w)", 0.91));
        assert_eq!(t.simplest_success.as_ref().map(|r| r.calibration), Some(2));
    }

    #[test]
    fn size_counts_atoms() {
        assert_eq!(size("(* P (exp (- 0.0 x)))"), 6);
        assert_eq!(size("x"), 1);
    }
}
