//! `ndvm fit` and `ndvm profile`: run a scene's population.
//!
//! `fit` shows a progress bar (standard error, hidden off a terminal), prints the ranked table
//! (or the results JSON with `--json`) and writes the results JSON (where the flags or the
//! scene say, else `ndvm-out/<scene>/results.json`) and the losses CSV where asked. Ctrl-C stops the fit cleanly: the results so far are still written
//! (unfinished candidates are marked `stopped`) and the exit status is 130. `profile` runs the
//! same fit and prints the per-stage table instead (`docs/profiling.md`).

use crate::Failure;
use crate::files::{check_writable, create_folder, default_out, read_scene, write_atomically};
use crate::flags::RunFlags;
use crate::interrupt::interrupt_flag;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use ndvm_components::scene::Scene;
use ndvm_systems::prelude::*;
use ndvm_systems::report;
use ndvm_systems::settings::Threads;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

#[derive(Args, Debug)]
pub struct FitArgs {
    /// The scene file (`*.scene.ron`); its relative paths are relative to its folder.
    scene: PathBuf,
    #[command(flatten)]
    run: RunFlags,
    /// Optimizer steps per candidate (overrides the scene's `steps`).
    #[arg(long, value_name = "N")]
    steps: Option<u32>,
    /// Write the results JSON here (default: the scene's `outputs.results`, else
    /// `ndvm-out/<scene>/results.json`).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Write per-step losses as CSV here (overrides the scene's `outputs.losses_csv`).
    #[arg(long, value_name = "FILE")]
    losses: Option<PathBuf>,
    /// Print the results JSON on standard output instead of the table.
    #[arg(long)]
    json: bool,
    /// Rows of the ranked table (and candidates drawn by `--plots`).
    #[arg(long, value_name = "N", default_value_t = 20)]
    top: usize,
    /// Write figures here (created if missing): each top candidate's data against its fitted
    /// curve with residuals, its loss per step, a ranking chart, and an index.html showing
    /// them all (docs/fitting.md).
    #[arg(long, value_name = "DIR")]
    plots: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct ProfileArgs {
    /// The scene file to fit and profile.
    scene: PathBuf,
    #[command(flatten)]
    run: RunFlags,
    /// Optimizer steps per candidate (overrides the scene's `steps`).
    #[arg(long, value_name = "N")]
    steps: Option<u32>,
    /// Print the profile as JSON.
    #[arg(long)]
    json: bool,
    /// Write a Chrome/Perfetto trace of every stage run (open in ui.perfetto.dev).
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
}

pub fn fit(args: FitArgs) -> Result<(), Failure> {
    let (scene, base) = read_scene(&args.scene)?;
    not_a_search(&scene, &args.scene)?;
    let interrupted = interrupt_flag();
    let options = FitOptions {
        threads: args.run.threads,
        steps: args.steps,
        interrupted: Some(interrupted.clone()),
        settings: settings(&args.run),
        ..FitOptions::default()
    };
    let results = match args
        .out
        .clone()
        .or(scene.outputs.results.as_ref().map(PathBuf::from))
    {
        Some(path) => path,
        None => {
            let dir = default_out(&args.scene);
            create_folder(&dir)?;
            dir.join("results.json")
        }
    };
    let losses = args
        .losses
        .clone()
        .or(scene.outputs.losses_csv.as_ref().map(PathBuf::from));
    // A results path that cannot be written fails now, not after the whole fit; two outputs
    // at one path would leave only the last.
    for path in std::iter::once(&results).chain(&losses) {
        check_writable(path)?;
    }
    if losses.as_ref().is_some_and(|l| same_file(l, &results)) {
        return Err(Failure::Usage(format!(
            "the results and the losses would both be written to {}: give two paths",
            results.display()
        )));
    }
    if let Some(dir) = &args.plots {
        std::fs::create_dir_all(dir).map_err(|e| {
            Failure::Usage(format!(
                "cannot create the plots folder {}: {e}",
                dir.display()
            ))
        })?;
        check_writable(&dir.join("index.html"))?;
    }
    let mut fit = start(&scene, &base, &options, &args.scene)?;
    let threads = Threads::resolve(options.threads, &scene).count();
    let report = run_with_bar(&mut fit);
    let timing = fit.profile().report();
    let json = report::to_json(&report, Some(&timing), threads);
    write_atomically(&results, &json)?;
    if let Some(path) = &losses {
        write_atomically(path, report.losses_csv())?;
    }
    if let Some(dir) = &args.plots {
        let data = fit.datasets();
        let curves = fit.curves(&report, args.top);
        for (name, text) in ndvm_systems::report::plots::files(&report, &data, &curves, args.top) {
            write_atomically(&dir.join(name), &text)?;
        }
    }
    if args.json {
        crate::output::print(&json)?;
    } else {
        let c = timing.counters;
        crate::output::print(&format!(
            "{}\n{} candidates, {} walks, {} replays, {:.2} s on {threads} thread(s); device: {}; \
             results in {}",
            report.table(args.top),
            report.candidates.len(),
            c.walks,
            c.replays,
            timing.wall_s,
            report.device.describe(),
            results.display()
        ))?;
    }
    if interrupted.load(Ordering::Relaxed) {
        say!("interrupted: results of the candidates so far were written");
        return Err(Failure::Interrupted);
    }
    if report.candidates.iter().all(|c| c.status == "failed") {
        return Err(Failure::Program);
    }
    Ok(())
}

pub fn profile(args: ProfileArgs) -> Result<(), Failure> {
    let (scene, base) = read_scene(&args.scene)?;
    not_a_search(&scene, &args.scene)?;
    let _trace = match &args.trace {
        Some(path) => Some(trace_to(path)?),
        None => None,
    };
    let options = FitOptions {
        threads: args.run.threads,
        steps: args.steps,
        interrupted: Some(interrupt_flag()),
        settings: settings(&args.run),
        ..FitOptions::default()
    };
    let mut fit = start(&scene, &base, &options, &args.scene)?;
    run_with_bar(&mut fit);
    let report = fit.profile().report();
    if args.json {
        crate::output::print(&serde_json::to_string_pretty(&report).unwrap_or_default())
    } else {
        crate::output::print(report.table().trim_end())
    }
}

/// A search scene is run by `ndvm search` (its results JSON carries the per-stage profile).
fn not_a_search(scene: &Scene, path: &Path) -> Result<(), Failure> {
    if scene.search.is_some() {
        say!(
            "error: {}: a search scene (it has a `search:` section): run it with `ndvm search`",
            path.display()
        );
        return Err(Failure::Program);
    }
    Ok(())
}

fn start(scene: &Scene, base: &Path, options: &FitOptions, path: &Path) -> Result<Fit, Failure> {
    Fit::new(scene, base, options).map_err(|e| {
        say!("error: {}: {e}", path.display());
        Failure::Program
    })
}

fn run_with_bar(fit: &mut Fit) -> FitReport {
    let start = fit.progress();
    let bar = ProgressBar::new(start.work_total.max(1));
    bar.set_style(
        ProgressStyle::with_template(
            "{bar:40} {percent:>3}% of {len} optimizer steps · {msg} · {elapsed} (ETA {eta})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let report = fit.run(|p| {
        bar.set_position(p.work_done);
        let best = p
            .best_loss
            .map_or_else(|| "-".to_string(), |l| format!("{l:.4e}"));
        bar.set_message(format!(
            "{}/{} candidates done · best loss {best}",
            p.finished, p.total
        ));
    });
    bar.finish_and_clear();
    report
}

/// Installs a Chrome-trace subscriber; the trace is flushed when the guard drops.
fn trace_to(path: &Path) -> Result<tracing_chrome::FlushGuard, Failure> {
    use tracing_subscriber::prelude::*;
    // Created here: the tracing layer would panic on a path it cannot create. Never through a
    // symbolic link, nor into a FIFO (which would block) or a device.
    crate::files::check_replaceable(path)?;
    let file = std::fs::File::create(path)
        .map_err(|e| Failure::Usage(format!("cannot write the trace {}: {e}", path.display())))?;
    let (layer, guard) = tracing_chrome::ChromeLayerBuilder::new()
        .writer(file)
        .include_args(false)
        .build();
    tracing_subscriber::registry()
        .with(layer)
        .try_init()
        .map_err(|e| Failure::Usage(format!("cannot trace: {e}")))?;
    Ok(guard)
}

/// Whether two output paths name one file (compared as written, and through their folders).
fn same_file(a: &Path, b: &Path) -> bool {
    let resolve = |p: &Path| {
        let folder = p.parent().filter(|f| !f.as_os_str().is_empty());
        let folder = folder.map_or_else(|| std::fs::canonicalize("."), std::fs::canonicalize);
        folder.ok().zip(p.file_name()).map(|(f, n)| f.join(n))
    };
    a == b || resolve(a).is_some_and(|x| Some(x) == resolve(b))
}

/// The default lane layout, with replay switched off or the steps per pass set on request.
fn settings(run: &RunFlags) -> FitSettings {
    let default = FitSettings::default();
    FitSettings {
        walk_every_step: run.walk_every_step,
        device: run.device,
        steps_per_pass: run.steps_per_pass.unwrap_or(default.steps_per_pass),
        ..default
    }
}
