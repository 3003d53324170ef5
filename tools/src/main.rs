//! `ndvm`: the command-line tool.
//!
//! Exit status: 0 success, 1 program error (syntax, unbound, arity, type, shape, divergence,
//! limit), 2 usage error (bad flags, unreadable files, inconsistent bindings).

mod diagnostics;
mod fuzz;
mod output;
mod run;

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
}

/// A failure of the CLI: either a program error (exit 1) or a usage error (exit 2).
#[derive(Debug)]
pub enum Failure {
    Program,
    Usage(String),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Run(args) => run::run(args),
        Command::Fuzz(args) => fuzz::fuzz(args),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Program) => ExitCode::from(1),
        Err(Failure::Usage(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(2)
        }
    }
}
