//! Admission: asking the proposers in turn and admitting their candidates into the fit.
//!
//! When the window has room, the search takes the next proposal from its queue (asking the
//! next proposer in turn when the queue is empty), checks what can be checked before decoding
//! (size, parameter names), draws its starting values from a seed of its own (the search's
//! seed and the candidate's number) and adds it to the fit. A proposal that cannot be admitted
//! becomes a failed calibration of each draw, with the reason.

use crate::run::seed::mix;
use crate::run::{
    Event, Inflight, MAX_SOURCE_BYTES, MAX_WARNINGS, Notes, Proposal, ProposerError, Search,
};
use ndvm_components::scene::{Parameters, Restarts};
use ndvm_systems::population;
use rayon::prelude::*;

impl Search {
    pub(super) fn warn(&mut self, message: String, on_event: &mut impl FnMut(Event<'_>)) {
        on_event(Event::Warning(&message));
        self.warning_count += 1;
        if self.warnings.len() < MAX_WARNINGS {
            self.warnings.push(message);
        }
    }

    pub(super) fn drain_notes(&mut self, notes: Notes, on_event: &mut impl FnMut(Event<'_>)) {
        for w in notes.warnings {
            self.warn(w, on_event);
        }
    }

    /// A proposer failed: it leaves the search, which goes on with the others.
    pub(super) fn drop_proposer(
        &mut self,
        i: usize,
        e: ProposerError,
        on_event: &mut impl FnMut(Event<'_>),
    ) {
        self.slots[i].done = true;
        self.slots[i].failed = true;
        self.slots[i].tally.error = Some(e.message.clone());
        self.warn(format!("{e} (it leaves the search)"), on_event);
    }

    /// The next proposal, asking the proposers in turn when the queue is empty.
    pub(super) fn next_proposal(
        &mut self,
        free: usize,
        on_event: &mut impl FnMut(Event<'_>),
    ) -> Option<(usize, Proposal)> {
        for _ in 0..=self.slots.len() {
            if let Some(p) = self.queue.pop_front() {
                return Some(p);
            }
            let i = (0..self.slots.len())
                .map(|k| (self.turn + k) % self.slots.len())
                .find(|&i| !self.slots[i].done)?;
            self.turn = (i + 1) % self.slots.len();
            let mut notes = Notes::default();
            let got = self.slots[i].proposer.propose(free, &mut notes);
            self.drain_notes(notes, on_event);
            match got {
                Ok(list) if list.is_empty() => self.slots[i].done = true,
                Ok(list) => self.queue.extend(list.into_iter().map(|p| (i, p))),
                Err(e) => self.drop_proposer(i, e, on_event),
            }
        }
        self.queue.pop_front()
    }

    /// Takes proposals until the window is full or the budget is spent; returns the members to
    /// admit into the fit (the refused ones are already failed calibrations).
    ///
    /// Which proposals fill the window does not depend on whether they can be admitted (a
    /// refused one holds its place until it is recorded), so they are taken first, in turn, and
    /// then checked, parsed for their skeletons and given their starting values in parallel:
    /// this runs beside the fit's pass, and on many cores it would otherwise be the longest
    /// task of a pass that follows a finished cohort.
    pub(super) fn refill(
        &mut self,
        on_event: &mut impl FnMut(Event<'_>),
    ) -> Vec<population::Member> {
        let draws = u64::from(self.spec.calibration.draws);
        let mut taken = Vec::new();
        while self.inflight.len() + taken.len() < self.spec.window {
            let left = self
                .max_calibrations
                .map_or(u64::MAX, |m| m - self.admitted);
            if left == 0 {
                break;
            }
            let free = self.spec.window - self.inflight.len() - taken.len();
            let Some((slot, proposal)) = self.next_proposal(free, on_event) else {
                break;
            };
            let index = self.next_candidate;
            self.next_candidate += 1;
            let n = draws.min(left);
            self.admitted += n;
            taken.push((index, n, slot, proposal));
        }
        let start = std::time::Instant::now();
        let (context, protocol, seed) = (&self.context, &self.protocol, self.spec.seed);
        let parameters = &self.parameters;
        let (template, template_params) = (self.template.as_deref(), &self.template_params);
        let prepared: Vec<_> = taken
            .into_par_iter()
            .map(|(index, n, slot, mut proposal)| {
                // Checked first: a refused program is never parsed, and one over the size
                // limit is kept only by its start (a 10 MB line was once parsed for its
                // skeleton and copied into every record and every proposer's result message).
                let checked = check_proposal(context, &proposal);
                if checked.is_err() && proposal.src.len() > MAX_SOURCE_BYTES {
                    proposal.src = crate::record::shortened(&proposal.src, 200);
                }
                let skeleton = match checked {
                    Ok(()) => crate::symbolic::expr::skeleton(&proposal.src, &proposal.params).ok(),
                    Err(_) => None,
                }
                .unwrap_or_else(|| proposal.src.chars().take(200).collect());
                // A template's filling becomes the whole program; the template's own parameters
                // join the filling's.
                let filled = checked.and_then(|()| {
                    let Some(t) = template else {
                        return Ok(None);
                    };
                    let mut names = proposal.params.clone();
                    let taken = |p: &&String| t.mentions(p) || template_params.contains(p);
                    if let Some(p) = names.iter().find(taken) {
                        return Err(format!(
                            "the parameter `{p}` is a name the template (or its starting state) uses: rename it"
                        ));
                    }
                    names.extend(template_params.iter().cloned());
                    let src = t.fill(&proposal.src, &proposal.params)?;
                    let src = match &context.trajectories {
                        Some(traj) => traj.program(&src),
                        None => src,
                    };
                    Ok(Some((src, names)))
                });
                let mut flight = Inflight {
                    proposer: slot,
                    proposal,
                    skeleton,
                    draws: n,
                    filled: None,
                };
                let member = filled.map(|filled| {
                    flight.filled = filled;
                    let (src, names) = flight.program();
                    let (src, names) = (src.to_string(), names.to_vec());
                    let params = Parameters {
                        names,
                        init: parameters.init.clone(),
                        restarts: Restarts {
                            count: n as u32,
                            scale: 0.0,
                            seed: mix(seed, index),
                        },
                        bounds: parameters.bounds.clone(),
                    };
                    population::member(
                        protocol,
                        index as usize,
                        flight.proposal.name.clone(),
                        src,
                        &params,
                        context.data.clone(),
                        context.shared.clone(),
                    )
                });
                (index, n, flight, member)
            })
            .collect();
        self.loop_times.parallel_s += start.elapsed().as_secs_f64();
        let mut members = Vec::new();
        let mut rejected = Vec::new();
        for (index, n, flight, member) in prepared {
            match member {
                Ok(m) => {
                    members.push(m);
                    self.inflight.insert(index, flight);
                }
                Err(why) => rejected.push((index, n, flight, why)),
            }
        }
        // A proposal that cannot even be admitted is a failed calibration of each draw.
        let mut records = Vec::new();
        for (index, n, flight, why) in rejected {
            for draw in 0..n as u32 {
                records.push((
                    flight.proposer,
                    self.make_record(
                        &flight,
                        index,
                        draw,
                        Default::default(),
                        (f64::NAN, None),
                        ("failed", Some(why.clone())),
                    ),
                ));
            }
            self.slots[flight.proposer].tally.candidates += 1;
        }
        self.emit(records, &[], on_event);
        members
    }
}

/// What makes a proposal unusable before it is decoded: its size and parameter names.
fn check_proposal(context: &population::Context, p: &Proposal) -> Result<(), String> {
    if p.src.len() > MAX_SOURCE_BYTES {
        return Err(format!(
            "the program is {} bytes, over the {} KiB limit",
            p.src.len(),
            MAX_SOURCE_BYTES >> 10
        ));
    }
    if p.params.len() > ndvm_components::limits::PARAMS {
        return Err(format!(
            "{} parameters, over the limit of {}",
            p.params.len(),
            ndvm_components::limits::PARAMS
        ));
    }
    for name in &p.params {
        let ok = !name.is_empty()
            && !name.contains(|c: char| c.is_whitespace() || "()[]'\";`,".contains(c))
            && name.parse::<f64>().is_err();
        if !ok {
            return Err(format!("`{name}` is not a parameter name"));
        }
    }
    match population::name_clash(&p.params, context.data.as_deref(), &context.shared) {
        Some(clash) => Err(clash),
        None => Ok(()),
    }
}
