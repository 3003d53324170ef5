//! `ndvm`: the command-line tool.
//!
//! Exit status: 0 success, 1 program error (syntax, unbound, arity, type, shape, divergence,
//! limit, or a malformed scene), 2 usage error (bad flags, unreadable files, inconsistent
//! bindings), 130 a fit stopped by Ctrl-C (its results so far are written).

/// `eprintln!` that cannot panic: a closed or full standard error (`2>&-`, `2>/dev/full`) loses
/// the message but not the exit status.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `eprint!` that cannot panic (see [`say!`]).
macro_rules! say_raw {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($arg)*);
    }};
}

mod commands;
mod diagnostics;
mod files;
mod flags;
mod interrupt;
mod output;

use commands::{asm, fit, fuzz, run, search};

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "ndvm",
    version,
    about = "Exact gradients for programs that stay data"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Evaluate a program over lanes, optionally with per-lane gradients.
    Run(run::RunArgs),
    /// Differential testing: generate programs, check them against the independent oracle
    /// (gates G1-G4) and print the feature-coverage table. Exits 1 if any program fails.
    Fuzz(fuzz::FuzzArgs),
    /// Fit every candidate of a scene (`*.scene.ron`): progress bar, ranked table, results
    /// JSON. Exit 1 on a malformed scene or when every candidate fails, 130 on Ctrl-C.
    Fit(fit::FitArgs),
    /// Fit a scene and print where the time went, stage by stage (see docs/profiling.md).
    Profile(fit::ProfileArgs),
    /// Co-search: calibrate candidates from proposers (a stream, an external process, the
    /// built-in `Evolve`) until a budget, with a calibration log, results and the frontier
    /// (see docs/search.md). Exit 1 on a malformed scene or when every proposer failed, 130 on
    /// Ctrl-C.
    Search(search::SearchArgs),
    /// Translate bytecode between its forms (.nbc assembly, .nbcb binary, .nbc.json) or
    /// compile dialect source to bytecode (see docs/bytecode.md).
    Asm(asm::AsmArgs),
}

/// A failure of the CLI: either a program error (exit 1) or a usage error (exit 2).
#[derive(Debug)]
pub enum Failure {
    Program,
    Usage(String),
    /// Stopped by Ctrl-C after writing what was finished.
    Interrupted,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Run(args) => run::run(args),
        Command::Fuzz(args) => fuzz::fuzz(args),
        Command::Fit(args) => fit::fit(args),
        Command::Profile(args) => fit::profile(args),
        Command::Search(args) => search::search(args),
        Command::Asm(args) => asm::asm(args),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Program) => ExitCode::from(1),
        Err(Failure::Interrupted) => ExitCode::from(130),
        Err(Failure::Usage(msg)) => {
            say!("error: {msg}");
            ExitCode::from(2)
        }
    }
}

/// mimalloc (v2, transparent huge pages off) instead of the system allocator: a fit allocates
/// small per-step buffers on every thread, and a new candidate's read/expand/decode is mostly
/// small allocations (docs/performance.md, "Both cores").
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
