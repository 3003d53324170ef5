//! Retirement: finished candidates become records — one per draw — in log order.
//!
//! After every fit step the search takes the finished candidates out of the fit, evaluates the
//! held-out points at each draw's final constants where the fit's own tasks did not (the fit's
//! `Scorer`), decides success, numbers the records, counts them (tally, timeline, per-proposer
//! counts), passes them to the caller and shows them to every proposer still in the search.

use crate::run::heldout::Job;
use crate::run::{Event, Inflight, Notes, Record, Search};
use ndvm_components::scene::search::Success;
use rayon::prelude::*;

/// Whether a candidate finished its calibration (its held-out R² is evaluated).
fn finished(status: &str) -> bool {
    matches!(status, "done" | "converged" | "stopped")
}

/// One calibration's record (numbered later, by [`Search::emit`]).
fn record_of(
    (success, proposer): (Success, &str),
    flight: &Inflight,
    candidate: u64,
    draw: u32,
    params: std::collections::BTreeMap<String, f64>,
    (train_loss, held_out_r2): (f64, Option<f64>),
    (status, detail): (&'static str, Option<String>),
) -> Record {
    let success = finished(status)
        && match success {
            Success::HeldOutR2(t) => held_out_r2.is_some_and(|r| r > t),
            Success::TrainLoss(t) => train_loss < t,
        };
    Record {
        calibration: 0,
        candidate,
        draw,
        proposer: proposer.to_string(),
        name: flight.proposal.name.clone(),
        skeleton: flight.skeleton.clone(),
        program: 0,
        src: flight.proposal.src.clone(),
        params,
        train_loss,
        held_out_r2,
        reconstruction_r2: None,
        success,
        status,
        detail,
        front: false,
    }
}

/// Each draw's record of one retired candidate, given its held-out R² per draw (`None`: it did
/// not finish, so none was evaluated).
fn records_of(
    who: (Success, &str),
    (c, flight): &(ndvm_systems::report::CandidateResult, Inflight),
    r2: Option<Vec<Option<f64>>>,
) -> Vec<Record> {
    let r2 = r2.unwrap_or_else(|| vec![None; c.restarts.len()]);
    let index = c.index as u64;
    c.restarts
        .iter()
        .enumerate()
        .map(|(draw, r)| {
            // A finished draw's status is its own: a loss that is not a number failed, and each
            // draw converged or reached the step limit by itself.
            let status = match c.status {
                "done" | "converged" if !r.loss.is_finite() => "non-finite",
                "done" | "converged" if r.converged => "converged",
                "done" | "converged" => "done",
                s => s,
            };
            record_of(
                who,
                flight,
                index,
                draw as u32,
                r.params.clone(),
                (r.loss, r2.get(draw).copied().flatten()),
                (status, c.detail.clone()),
            )
        })
        .collect()
}

impl Search {
    pub(super) fn make_record(
        &self,
        flight: &Inflight,
        candidate: u64,
        draw: u32,
        params: std::collections::BTreeMap<String, f64>,
        loss: (f64, Option<f64>),
        status: (&'static str, Option<String>),
    ) -> Record {
        let proposer = self.slots[flight.proposer].proposer.name();
        let success = self.spec.success;
        record_of(
            (success, proposer),
            flight,
            candidate,
            draw,
            params,
            loss,
            status,
        )
    }

    /// The retired candidates, each with what the search knows of it, out of the window.
    pub(super) fn take_finished(
        &mut self,
        done: Vec<ndvm_systems::report::CandidateResult>,
    ) -> Vec<(ndvm_systems::report::CandidateResult, Inflight)> {
        done.into_iter()
            .filter_map(|c| {
                let flight = self.inflight.remove(&(c.index as u64))?;
                Some((c, flight))
            })
            .collect()
    }

    /// Records of the retired candidates, one per draw.
    pub(super) fn record(
        &mut self,
        mut done: Vec<(ndvm_systems::report::CandidateResult, Inflight)>,
        on_event: &mut impl FnMut(Event<'_>),
    ) {
        // Each finished candidate's held-out R², where its own task did not score it (the fit
        // steps a draw at a time, or the candidate finished outside a pass): in parallel.
        let start = std::time::Instant::now();
        let unscored =
            |c: &ndvm_systems::report::CandidateResult| finished(c.status) && c.scored.is_none();
        let jobs: Vec<Job<'_>> = done
            .iter()
            .filter(|(c, _)| unscored(c))
            .map(|(c, flight)| {
                let (src, names) = flight.program();
                let restarts = c.restarts.len();
                let mut values = vec![0.0; names.len() * restarts];
                for (r, draw) in c.restarts.iter().enumerate() {
                    for (p, n) in names.iter().enumerate() {
                        values[p * restarts + r] = draw.params[n];
                    }
                }
                Job {
                    src,
                    params: names,
                    values,
                    restarts,
                }
            })
            .collect();
        self.held.trim();
        let scored_here = !jobs.is_empty();
        let mut r2s = self.held.r2_all(&jobs).into_iter();
        drop(jobs);
        if scored_here {
            self.loop_times.held_out_s += start.elapsed().as_secs_f64();
        }
        // The records are independent until they are numbered: built in parallel too.
        let r2s: Vec<Option<Vec<Option<f64>>>> = done
            .iter_mut()
            .map(|(c, _)| match c.scored.take() {
                _ if !finished(c.status) => None,
                Some(scored) => Some(scored),
                None => r2s.next(),
            })
            .collect();
        let names: Vec<&str> = self.slots.iter().map(|s| s.proposer.name()).collect();
        let success = self.spec.success;
        let built: Vec<Vec<Record>> = done
            .par_iter()
            .zip(r2s)
            .map(|(d, r2)| records_of((success, names[d.1.proposer]), d, r2))
            .collect();
        drop(names);
        self.loop_times.parallel_s += start.elapsed().as_secs_f64();
        let mut records = Vec::new();
        let mut programs = Vec::new();
        for ((_, flight), rs) in done.iter().zip(built) {
            self.slots[flight.proposer].tally.candidates += 1;
            programs.extend(rs.iter().map(|_| flight.program()));
            records.extend(rs.into_iter().map(|r| (flight.proposer, r)));
        }
        self.emit(records, &programs, on_event);
    }

    /// Numbers the records, counts them, passes them on and shows them to the proposers.
    /// `programs`: each record's calibrated program and its parameters, where the search
    /// measures the reconstruction R² of calibrations that join the front (empty otherwise).
    pub(super) fn emit(
        &mut self,
        records: Vec<(usize, Record)>,
        programs: &[(&str, &[String])],
        on_event: &mut impl FnMut(Event<'_>),
    ) {
        if records.is_empty() {
            return;
        }
        let now = self.elapsed();
        let mut out = Vec::with_capacity(records.len());
        // A candidate's draws come one after another and share its program: one lookup each.
        let mut last: Option<(u64, u64)> = None;
        for (i, (slot, mut r)) in records.into_iter().enumerate() {
            r.calibration = self.tally.calibrations;
            r.program = match last {
                Some((candidate, program)) if candidate == r.candidate => program,
                _ => self.programs.id(&r.src),
            };
            last = Some((r.candidate, r.program));
            if let (Some(whole), Some((src, names))) = (&self.whole, programs.get(i))
                && self.tally.front.admits(&r)
            {
                r.reconstruction_r2 = whole.one(src, names, &r.params);
            }
            let before = self.tally.successful_skeletons.len();
            let improved = self.tally.add(&mut r);
            let new_success = self.tally.successful_skeletons.len() > before;
            if r.success && self.first_success_s.is_none() {
                self.first_success_s = Some(now);
            }
            let tally = &mut self.slots[slot].tally;
            tally.calibrations += 1;
            tally.successes += u64::from(r.success);
            on_event(Event::Calibrated(&r, now));
            if improved || new_success {
                let p = self.point();
                self.timeline.offer(p, new_success);
            }
            out.push(r);
        }
        let records = out;
        let p = self.point();
        self.timeline.offer(p, false);
        for i in 0..self.slots.len() {
            if self.slots[i].failed {
                continue;
            }
            let mut notes = Notes::default();
            let seen = self.slots[i].proposer.observe(&records, &mut notes);
            self.drain_notes(notes, on_event);
            if let Err(e) = seen {
                self.drop_proposer(i, e, on_event);
            }
        }
    }
}
