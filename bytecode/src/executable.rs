//! A program for either client: the dialect's tree walk or the bytecode VM, behind one
//! interface — what a fit, a population or the CLI holds for a candidate, so both clients
//! calibrate side by side through the same stages (walk, replay, backward, GPU).

use crate::code::Code;
use crate::exec::Runner;
use ndvm_engine::error::{Error, ErrorKind, Result};
use ndvm_engine::extension::Registry;
use ndvm_engine::value::Value;
use ndvm_engine::{Bindings, Evaluation, Program, Real, Vm, evaluate};
use std::sync::Arc;

/// How a program text or file is read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Form {
    /// Dialect source, walked.
    #[default]
    Dialect,
    /// Dialect source compiled to bytecode ([`crate::compile`]).
    Compiled,
    /// `.nbc` assembly text.
    Assembly,
    /// The binary form (`.nbcb`).
    Binary,
    /// The JSON form (`.nbc.json`).
    Json,
}

impl Form {
    /// The form of a file by its name: `.nbc`, `.nbcb`, `.nbc.json`; anything else is dialect
    /// source, compiled to bytecode when `bytecode` is set.
    pub fn of(path: &str, bytecode: bool) -> Form {
        if path.ends_with(".nbc") {
            Form::Assembly
        } else if path.ends_with(".nbcb") {
            Form::Binary
        } else if path.ends_with(".nbc.json") {
            Form::Json
        } else if bytecode {
            Form::Compiled
        } else {
            Form::Dialect
        }
    }

    /// Whether it runs on the bytecode client.
    pub fn is_bytecode(self) -> bool {
        self != Form::Dialect
    }
}

/// A loaded program.
#[derive(Clone, Debug)]
pub enum Executable {
    Walk(Arc<Program>),
    Bytecode(Arc<Code>),
}

impl Executable {
    /// Reads `bytes` in `form` against the input names and custom primitives.
    pub fn load(form: Form, bytes: &[u8], names: &[&str], registry: &Registry) -> Result<Self> {
        let text = || {
            std::str::from_utf8(bytes)
                .map_err(|e| Error::unlocated(ErrorKind::Syntax, format!("not UTF-8 text: {e}")))
        };
        let code = match form {
            Form::Dialect => {
                let p = Program::with_primitives(text()?, names, registry)?;
                return Ok(Executable::Walk(Arc::new(p)));
            }
            Form::Compiled => crate::compile(text()?, names, registry)?,
            Form::Assembly => crate::assemble(text()?, names, registry)?,
            Form::Binary => Code::from_binary(bytes, registry)?,
            Form::Json => Code::from_json(text()?, registry)?,
        };
        Ok(Executable::Bytecode(Arc::new(code)))
    }

    /// The program the engine knows it by (for bytecode, its site program): what
    /// [`Vm::replay`], [`Vm::rebind`] and [`Vm::input_grad`] take.
    pub fn program(&self) -> &Program {
        match self {
            Executable::Walk(p) => p,
            Executable::Bytecode(c) => c.sites(),
        }
    }

    /// The text errors are located in.
    pub fn source(&self) -> &str {
        match self {
            Executable::Walk(p) => &p.source,
            Executable::Bytecode(c) => c.source(),
        }
    }

    /// "walk" or "bytecode".
    pub fn client(&self) -> &'static str {
        match self {
            Executable::Walk(_) => "walk",
            Executable::Bytecode(_) => "bytecode",
        }
    }

    /// Walks or runs it over the lanes of `bindings` (see [`Vm::eval`], [`Runner::run`]).
    pub fn run<R: Real>(
        &self,
        vm: &mut Vm<R>,
        runner: &mut Runner,
        bindings: &Bindings<R>,
        record: bool,
    ) -> Result<Value> {
        match self {
            Executable::Walk(p) => vm.eval(p, bindings, record),
            Executable::Bytecode(c) => runner.run(vm, c, bindings, record),
        }
    }

    /// Results and, with `grad`, gradients (see [`evaluate`]).
    pub fn evaluate<R: Real>(
        &self,
        vm: &mut Vm<R>,
        runner: &mut Runner,
        bindings: &Bindings<R>,
        grad: bool,
    ) -> Result<Evaluation<R>> {
        match self {
            Executable::Walk(p) => evaluate(vm, p, bindings, grad),
            Executable::Bytecode(c) => runner.evaluate(vm, c, bindings, grad),
        }
    }
}
