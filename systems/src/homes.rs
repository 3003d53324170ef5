//! Running a pass's tasks where they ran last time: each task has a **home** worker, and a
//! worker takes its own tasks first.
//!
//! A fit's pipeline pass runs one task per candidate, and the same candidates come back pass
//! after pass. Under plain work stealing (`par_iter`) a candidate lands on whichever worker
//! takes it, so its tape, payload and optimizer state move between cores' caches from one pass
//! to the next. Here every worker first runs the tasks whose home it is, in the order given
//! (costliest first), and only then takes the others' — from the back of their lists, the
//! cheapest first, so the two meet at the end and the pass does not wait on a large task
//! started last. A worker still busy elsewhere (the search's record beside the pass) simply
//! has its tasks taken. Each task runs once; which worker runs it does not change its result.
//!
//! Measured on the 2-core VM, the builds before and after alternated (docs/changelog.md,
//! "Scaling, Fourth part"): 2 threads went from 79% to 92% of two one-thread processes run at once on
//! the scalar search, and from 90% to 99% on the co-search fit.

use std::sync::Mutex;

/// Runs `f(i, &mut items[i])` for every item on the current rayon pool, item `i` at home on
/// worker `home(&items[i]) % workers`; the outputs in item order.
pub fn run_at_home<T, O>(
    items: &mut [T],
    home: impl Fn(&T) -> usize + Sync,
    f: impl Fn(usize, &mut T) -> O + Sync,
) -> Vec<O>
where
    T: Send,
    O: Send,
{
    let workers = rayon::current_num_threads().max(1);
    if workers == 1 || items.len() <= 1 {
        return items.iter_mut().enumerate().map(|(i, t)| f(i, t)).collect();
    }
    let mut homes: Vec<Vec<usize>> = vec![Vec::new(); workers];
    for (i, t) in items.iter().enumerate() {
        homes[home(t) % workers].push(i);
    }
    // A worker claims an item by taking it out of its cell (held only for that moment).
    let cells: Vec<Mutex<Option<&mut T>>> = items.iter_mut().map(|t| Mutex::new(Some(t))).collect();
    let parts: Vec<Vec<(usize, O)>> = rayon::broadcast(|ctx| {
        let me = ctx.index() % workers;
        let mut out = Vec::new();
        for i in visits(&homes, me) {
            let claimed = cells[i].lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(item) = claimed {
                out.push((i, f(i, item)));
            }
        }
        out
    });
    let mut all: Vec<(usize, O)> = parts.into_iter().flatten().collect();
    all.sort_unstable_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, o)| o).collect()
}

/// The order worker `me` tries the items in: its own list front to back, then every other
/// worker's from the back.
pub(crate) fn visits(homes: &[Vec<usize>], me: usize) -> impl Iterator<Item = usize> + '_ {
    let others = (1..homes.len()).flat_map(move |k| homes[(me + k) % homes.len()].iter().rev());
    homes[me].iter().chain(others).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_runs_once_and_outputs_keep_their_order() {
        for threads in [1, 2, 3, 8] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("pool");
            let mut items: Vec<u64> = (0..1000).collect();
            let out = pool.install(|| {
                run_at_home(
                    &mut items,
                    |&x| (x * 7) as usize,
                    |i, x| {
                        *x += 1;
                        (i, *x * 2)
                    },
                )
            });
            assert_eq!(items, (1..=1000).collect::<Vec<u64>>(), "{threads} threads");
            let want: Vec<(usize, u64)> = (0..1000).map(|i| (i, 2 * (i as u64 + 1))).collect();
            assert_eq!(out, want, "{threads} threads");
        }
    }

    #[test]
    fn a_worker_tries_its_own_items_first_then_the_others_cheapest_first() {
        let homes = vec![vec![0, 3, 6], vec![1, 4], vec![2, 5, 7]];
        assert_eq!(
            visits(&homes, 0).collect::<Vec<_>>(),
            [0, 3, 6, 4, 1, 7, 5, 2]
        );
        assert_eq!(
            visits(&homes, 1).collect::<Vec<_>>(),
            [1, 4, 7, 5, 2, 6, 3, 0]
        );
        assert_eq!(
            visits(&homes, 2).collect::<Vec<_>>(),
            [2, 5, 7, 6, 3, 0, 4, 1]
        );
    }
}
