//! `ndvm asm`: translate a program between the bytecode forms — `.nbc` assembly, `.nbcb`
//! binary, `.nbc.json` — or compile dialect source to any of them. The output is verified
//! bytecode: `ndvm run` accepts it as it is.

use crate::Failure;
use crate::diagnostics;
use clap::{Args, ValueEnum};
use ndvm_bytecode::{Executable, Form};
use ndvm_engine::extension::Registry;

#[derive(Args, Debug)]
pub struct AsmArgs {
    /// The program: `.nbc`, `.nbcb`, `.nbc.json`, or dialect source (compiled).
    #[arg(value_name = "PROGRAM_FILE")]
    program: String,
    /// The input names in binding order, comma-separated (what `LOAD` and variables resolve
    /// against; a binary or JSON file carries its own).
    #[arg(long, value_name = "a,b,...", default_value = "")]
    inputs: String,
    /// The form to write.
    #[arg(long, value_enum, default_value_t = To::Nbc)]
    to: To,
    /// Where to write it (standard output when absent; a binary needs a file).
    #[arg(short, long, value_name = "FILE")]
    output: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum To {
    /// Assembly text (a listing).
    Nbc,
    /// The binary form.
    Nbcb,
    /// The JSON form.
    Json,
}

pub fn asm(args: AsmArgs) -> Result<(), Failure> {
    let path = args.program.as_str();
    let form = Form::of(path, true);
    let bytes = crate::run::read_program(path, form)?;
    let names: Vec<&str> = args.inputs.split(',').filter(|s| !s.is_empty()).collect();
    let code = match Executable::load(form, &bytes, &names, &Registry::default()) {
        Ok(Executable::Bytecode(code)) => code,
        Ok(Executable::Walk(_)) => return Err(Failure::Usage("not a bytecode form".into())),
        Err(e) => {
            say!(
                "{}",
                diagnostics::render(&e, path, &String::from_utf8_lossy(&bytes))
            );
            return Err(Failure::Program);
        }
    };
    let out = match args.to {
        To::Nbc => ndvm_bytecode::asm::listing(&code.parts).0.into_bytes(),
        To::Nbcb => code.to_binary(),
        To::Json => code.to_json().into_bytes(),
    };
    match &args.output {
        // By temporary file and rename: an interrupted write keeps the previous file whole.
        Some(file) => crate::files::write_atomically(std::path::Path::new(file), &out),
        None if args.to == To::Nbcb => Err(Failure::Usage(
            "the binary form needs a file: give -o FILE".into(),
        )),
        None => crate::output::print_bytes(&out),
    }
}
