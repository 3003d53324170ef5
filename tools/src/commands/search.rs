//! `ndvm search`: run a search scene to its budget (docs/search.md).
//!
//! A live status line on standard error (hidden off a terminal), warnings as they come, and at
//! the end a summary and the best skeletons (or the results JSON with `--json`). Into its output
//! folder (`--out DIR`, the scene's `search.out`, else `ndvm-out/<scene>/`; claimed by one run at
//! a time: `ndvm_systems::folder`) it streams the calibration log (`calibrations.jsonl`, with
//! each program once in `programs.jsonl`) and writes the results (`search.json`), the frontier
//! (`frontier.csv`) and the plots (`frontier.svg`, `front.svg`). Ctrl-C or SIGTERM stops the
//! search and writes what was found (exit status 130); a second one exits at once, the files
//! whole. With `--shards N` the search runs as N shards at once, one to a worker, merged when they
//! end (docs/search.md, "Shards").

use crate::Failure;
use crate::files::{default_out, read_scene};
use crate::flags::RunFlags;
use crate::interrupt::interrupt_flag;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use ndvm_components::scene::Precision;
use ndvm_search::log::{LOG_FILES, LogWriter};
use ndvm_search::report::RESULT_FILES;
use ndvm_search::shards::Plan;
use ndvm_search::shards::local::run_local_with;
use ndvm_search::{Event, Record, Search, SearchOptions, SearchReport};
use ndvm_systems::folder::{Folder, FolderError, LogFile};
use ndvm_systems::settings::Threads;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{SyncSender, sync_channel};
use std::thread::JoinHandle;

#[derive(Args, Debug)]
pub struct SearchArgs {
    /// The search scene (`*.scene.ron` with a `search:` section).
    scene: PathBuf,
    /// Stop after this many seconds (overrides the scene's budget).
    #[arg(
        long,
        value_name = "S",
        conflicts_with = "calibrations",
        allow_negative_numbers = true
    )]
    budget_seconds: Option<f64>,
    /// Stop after this many calibrations (results are then identical at every thread count).
    #[arg(long, value_name = "N")]
    calibrations: Option<u64>,
    /// The search's seed (overrides the scene's `seed`): another seed, another search.
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    #[command(flatten)]
    run: RunFlags,
    /// Write the log, results, frontier CSV and plot into this folder (created if missing;
    /// default: the scene's `search.out`, else `ndvm-out/<scene>/`).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print the results JSON on standard output instead of the summary.
    #[arg(long)]
    json: bool,
    /// The evaluator's precision (default: the scene's, else f32).
    #[arg(long, value_name = "f32|f64", value_parser = crate::flags::precision())]
    precision: Option<Precision>,
    /// Rows of the best-skeletons table.
    #[arg(long, value_name = "N", default_value_t = 10)]
    top: usize,
    /// Run the search as N shards at once, each on a worker of its own, merged into one result
    /// (docs/search.md, "Shards"): the search's cores share nothing. Results depend on N, never
    /// on `--threads`; one shard is the plain search. The log is written when it ends.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    shards: Option<u32>,
    /// Rounds of a sharded search; between them each shard's best programs seed every shard's
    /// Evolve (default: 4 when several shards run Evolve, else 1).
    #[arg(long, value_name = "N", requires = "shards",
          value_parser = clap::value_parser!(u32).range(1..=4096))]
    epochs: Option<u32>,
}

pub fn search(args: SearchArgs) -> Result<(), Failure> {
    let (mut scene, base) = read_scene(&args.scene)?;
    if let (Some(seed), Some(spec)) = (args.seed, scene.search.as_mut()) {
        spec.seed = seed;
    }
    let Some(spec) = &scene.search else {
        say!(
            "error: {}: not a search scene (it has no `search:` section; `ndvm fit` runs it)",
            args.scene.display()
        );
        return Err(Failure::Program);
    };
    let precision = args.precision;
    if let Some(s) = args.budget_seconds {
        ndvm_components::limits::check_seconds("--budget-seconds", s).map_err(Failure::Usage)?;
    }
    let out = args
        .out
        .clone()
        .or(spec.out.as_ref().map(PathBuf::from))
        .unwrap_or_else(|| default_out(&args.scene));
    // A sharded search's plan (`--shards`), checked before anything is written.
    let plan = match args.shards {
        None => None,
        Some(shards) => {
            let (c, s) = (args.calibrations, args.budget_seconds);
            let plan = Plan::new(&scene, shards as usize, args.epochs, c, s, None);
            Some(plan.map_err(|e| {
                say!("error: {}: {e}", args.scene.display());
                Failure::Program
            })?)
        }
    };
    // Claim the folder before any work, so a long search cannot end with nowhere to go; it
    // changes only once the search has begun.
    let folder = claim(&out, &args.scene)?;
    let log = LogWriter::in_folder(&folder);
    let interrupted = interrupt_flag();
    let options = SearchOptions {
        threads: args.run.threads,
        seconds: args.budget_seconds,
        calibrations: args.calibrations,
        interrupted: Some(interrupted.clone()),
        precision,
        walk_every_step: args.run.walk_every_step,
        steps_per_pass: args.run.steps_per_pass,
        device: args.run.device,
        ..SearchOptions::default()
    };
    if let Some(plan) = plan {
        return sharded(&args, &scene, &base, options, (plan, log, &folder));
    }
    let mut search = Search::new(&scene, &base, &options).map_err(|e| {
        say!("error: {}: {e}", args.scene.display());
        Failure::Program
    })?;
    let bar = status_line(&search);
    // A writer thread pays where the search has cores to spare; on two it only takes turns
    // (and a full channel stalls the search: 16 threads asked for on 2 cores start 2 workers).
    let workers = Threads::resolve(args.run.threads, &scene).workers();
    let mut log = Logger::new(log, workers >= 4);
    // The line is redrawn at most ten times a second: a progress event comes after every
    // pass (hundreds a second), in the search's serial part between passes.
    let mut shown: Option<std::time::Instant> = None;
    let report = search.run(|event| match event {
        Event::Calibrated(record, elapsed_s) => log.write(record, elapsed_s),
        Event::Progress(_) if shown.is_some_and(|t| t.elapsed().as_millis() < 100) => {}
        Event::Progress(p) => {
            shown = Some(std::time::Instant::now());
            if let Some(n) = p.max_calibrations {
                bar.set_position(p.calibrations.min(n));
            } else if let Some(s) = p.seconds {
                bar.set_position((p.elapsed_s / s.max(1e-9) * 1000.0).min(1000.0) as u64);
            }
            let best = p
                .best
                .map_or_else(|| "-".to_string(), |b| format!("{b:.4}"));
            let budget = match (p.max_calibrations, p.seconds) {
                (Some(n), _) => format!("{}/{n} calibrations", p.calibrations),
                (None, Some(s)) => {
                    format!("{:.1}/{s} s, {} calibrations", p.elapsed_s, p.calibrations)
                }
                (None, None) => format!("{} calibrations", p.calibrations),
            };
            bar.set_message(format!(
                "{budget} ({:.0}/s) · best {best} · {} successful skeletons",
                p.calibrations as f64 / p.elapsed_s.max(1e-9),
                p.distinct_successes
            ));
        }
        Event::Warning(w) => bar.suspend(|| say!("warning: {w}")),
    });
    bar.finish_and_clear();
    let wrote = log.finish().map_err(|e| {
        say!("error: could not write the calibration log: {e}");
    });
    finish(&args, &report, &folder, wrote.is_ok(), &interrupted)
}

/// `--shards N`: the plan's shards run at once on the workers ([`run_local_with`]), then the
/// merged log and results are written as a plain search writes them.
fn sharded(
    args: &SearchArgs,
    scene: &ndvm_components::scene::Scene,
    base: &Path,
    options: SearchOptions,
    (plan, mut log, folder): (Plan, Log, &Folder),
) -> Result<(), Failure> {
    let bar = match plan.calibrations {
        Some(n) => ProgressBar::new(n),
        None => ProgressBar::new_spinner(),
    };
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos} calibrations ({per_sec}) in {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let rounds = if plan.epochs == 1 { "" } else { "s" };
    bar.set_message(format!(
        "{} shards, {} epoch{rounds}",
        plan.shards, plan.epochs
    ));
    let merged =
        run_local_with(scene, base, &options, &plan, &|_| bar.inc(1), &mut log).map_err(|e| {
            say!("error: {}: {e}", args.scene.display());
            Failure::Program
        })?;
    bar.finish_and_clear();
    let report = &merged.report;
    for w in &report.warnings {
        say!("warning: {w}");
    }
    if let Some(e) = &merged.log_error {
        say!("error: could not write the calibration log: {e}");
    }
    let interrupted = options.interrupted.unwrap_or_default();
    finish(
        args,
        report,
        folder,
        merged.log_error.is_none(),
        &interrupted,
    )
}

/// Writes the results and frontier, prints the summary (or the JSON) and picks the exit status.
fn finish(
    args: &SearchArgs,
    report: &SearchReport,
    folder: &Folder,
    log_written: bool,
    interrupted: &AtomicBool,
) -> Result<(), Failure> {
    // Results that describe a log not on disk whole would disagree with it: none are written.
    let failed_write = !log_written || write_outputs(folder, report, &args.scene).is_err();
    if args.json {
        crate::output::print(&report.to_json())?;
    } else {
        let mut text = report.summary_text();
        if !report.front.entries.is_empty() {
            text += "\n";
            text += &report.front.table(report.by_r2());
        }
        if !report.top.is_empty() {
            text += "\n";
            text += &report.table(args.top);
        }
        text += &if failed_write {
            format!(
                "\nthe files in {}/ are incomplete (the error above)\n",
                folder.dir().display()
            )
        } else {
            format!(
                "\nlog, results and frontier in {}/ ({}, {})\n",
                folder.dir().display(),
                LOG_FILES.join(", "),
                RESULT_FILES.join(", ")
            )
        };
        crate::output::print(text.trim_end())?;
    }
    if interrupted.load(Ordering::Relaxed) {
        say!("interrupted: what was found is written");
        return Err(Failure::Interrupted);
    }
    let proposers_failed = report.proposers.iter().any(|p| p.error.is_some());
    if failed_write || (report.summary.stopped_by == "proposers" && proposers_failed) {
        return Err(Failure::Program);
    }
    Ok(())
}

/// The streamed log: `calibrations.jsonl`, and `programs.jsonl` with each program's source
/// once, written before the first calibration that names it (`ndvm_search::log`).
type Log = LogWriter<LogFile>;

/// The calibration log, written as the search goes: inline, or on a thread of its own when the
/// search has four workers or more — the search then hands each record over and goes on, since
/// on many cores the JSON lines would cost its loop more than its own work per calibration. The
/// bytes are the same either way; the first write error stops the log and is reported at the
/// end.
enum Logger {
    Inline(Log, Option<std::io::Error>),
    Thread {
        tx: SyncSender<(Record, f64)>,
        writer: JoinHandle<std::io::Result<()>>,
    },
}

impl Logger {
    fn new(mut log: Log, threaded: bool) -> Logger {
        if !threaded {
            return Logger::Inline(log, None);
        }
        let (tx, rx) = sync_channel::<(Record, f64)>(4096);
        let writer = std::thread::spawn(move || {
            for (record, elapsed_s) in rx {
                log.write(&record, elapsed_s)?;
            }
            log.flush()
        });
        Logger::Thread { tx, writer }
    }

    fn write(&mut self, record: &Record, elapsed_s: f64) {
        match self {
            Logger::Inline(log, error @ None) => {
                if let Err(e) = log.write(record, elapsed_s) {
                    *error = Some(e);
                }
            }
            Logger::Inline(..) => {}
            // Nothing is sent once the writer has stopped on an error.
            Logger::Thread { tx, .. } => {
                let _ = tx.send((record.clone(), elapsed_s));
            }
        }
    }

    /// Every record written and flushed, or the first error.
    fn finish(self) -> Result<(), String> {
        match self {
            Logger::Inline(_, Some(e)) => Err(e.to_string()),
            Logger::Inline(mut log, None) => log.flush().map_err(|e| e.to_string()),
            Logger::Thread { tx, writer } => {
                drop(tx);
                match writer.join() {
                    Ok(done) => done.map_err(|e| e.to_string()),
                    Err(_) => Err("the log writer stopped".into()),
                }
            }
        }
    }
}

/// Claims the output folder (`ndvm_systems::folder`): a folder another run holds, or an output
/// that is not a regular file, is a usage error (exit 2) before any work.
fn claim(dir: &Path, scene: &Path) -> Result<Arc<Folder>, Failure> {
    let holder = format!("`ndvm search {}`", scene.display());
    match Folder::claim(dir, &LOG_FILES, &RESULT_FILES, &holder) {
        Ok(folder) => Ok(Arc::new(folder)),
        Err(e @ (FolderError::Busy { .. } | FolderError::Unusable(_))) => {
            Err(Failure::Usage(e.to_string()))
        }
    }
}

/// The results, each whole, `search.json` first; the first that fails is reported.
fn write_outputs(folder: &Folder, report: &SearchReport, scene: &Path) -> Result<(), ()> {
    let scene = scene
        .file_name()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    (folder.write_results(report.files(&scene))).map_err(|e| say!("error: {e}"))
}

/// A bar over the budget (seconds or calibrations) with the search's figures as its message.
fn status_line(search: &Search) -> ProgressBar {
    let p = search.progress();
    let bar = ProgressBar::new(p.max_calibrations.unwrap_or(1000));
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}
