//! `ndvm run`: evaluate one program over lanes.

use crate::Failure;
use crate::{diagnostics, output};
use clap::Args;
use ndvm_bytecode::{Executable, Form};
use ndvm_components::BindingsFile;
use ndvm_components::input_file;
use ndvm_components::scene::{Device, Precision};
use ndvm_engine::prelude::*;
use std::path::Path;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The program file (`-` reads standard input). Not needed with --expr. A `.nbc` (bytecode
    /// assembly), `.nbcb` (binary bytecode) or `.nbc.json` file runs on the bytecode client.
    #[arg(value_name = "PROGRAM_FILE", required_unless_present = "expr")]
    program: Option<String>,
    /// Run on the bytecode client: dialect source (a file, --expr or standard input) is
    /// compiled to bytecode first (the subset in docs/bytecode.md).
    #[arg(long)]
    bytecode: bool,
    /// The program text itself.
    #[arg(long, value_name = "SRC", conflicts_with = "program")]
    expr: Option<String>,
    /// A scalar input shared by every lane (repeatable).
    #[arg(long = "bind", value_name = "NAME=VALUE")]
    binds: Vec<String>,
    /// A per-lane input (repeatable; every list has the same length B).
    #[arg(long = "lane", value_name = "NAME=v0,v1,...")]
    lanes: Vec<String>,
    /// A JSON file of scalars, lanes and matrices.
    #[arg(long, value_name = "FILE.json")]
    bindings: Option<String>,
    /// Also compute the gradient of the result with respect to every scalar and per-lane input.
    #[arg(long)]
    grad: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Payload precision.
    #[arg(long, default_value = "f32", value_name = "f32|f64", value_parser = crate::flags::precision())]
    precision: Precision,
    /// Evaluate N times, reusing the decoded program, and report the median time per evaluation.
    #[arg(long, value_name = "N", default_value_t = 1)]
    repeat: usize,
    /// Eval-step limit (form evaluations and tail calls).
    #[arg(long, value_name = "N")]
    max_steps: Option<u64>,
    /// Heap-cell limit (pairs, closures, live frames).
    #[arg(long, value_name = "N")]
    max_heap_cells: Option<u64>,
    /// Tape-node limit.
    #[arg(long, value_name = "N")]
    max_tape_nodes: Option<u64>,
    /// Recursion-depth limit (nested non-tail calls).
    #[arg(long, value_name = "N")]
    max_depth: Option<u64>,
    /// Payload limit in bytes.
    #[arg(long, value_name = "N")]
    max_payload_bytes: Option<u64>,
    /// Where the numbers are computed: `gpu` walks on the CPU (recording the tape) and replays
    /// it — forward and gradient — on the GPU (f32 only); `auto` and `cpu` stay on the CPU
    /// (one evaluation does not pay for an upload). The JSON names the device.
    #[arg(long, default_value = "auto", value_name = "cpu|gpu|auto", value_parser = crate::flags::device())]
    device: Device,
}

impl RunArgs {
    fn limits(&self) -> Limits {
        let d = Limits::default();
        Limits {
            eval_steps: self.max_steps.unwrap_or(d.eval_steps),
            heap_cells: self.max_heap_cells.unwrap_or(d.heap_cells),
            tape_nodes: self.max_tape_nodes.unwrap_or(d.tape_nodes),
            recursion_depth: self.max_depth.unwrap_or(d.recursion_depth),
            payload_bytes: self.max_payload_bytes.unwrap_or(d.payload_bytes),
        }
    }

    /// The program's display name and contents (text, or bytes for a binary form).
    fn source(&self, form: Form) -> Result<(String, Vec<u8>), Failure> {
        if let Some(src) = &self.expr {
            return Ok(("<expr>".into(), src.clone().into_bytes()));
        }
        match self.program.as_deref() {
            Some("-") => {
                let s = input_file::read_from(std::io::stdin(), input_file::TEXT_LIMIT)
                    .map_err(|e| Failure::Usage(format!("reading standard input: {e}")))?;
                Ok(("<stdin>".into(), s.into_bytes()))
            }
            Some(path) => read_program(path, form).map(|b| (path.to_string(), b)),
            None => Err(Failure::Usage("give a PROGRAM_FILE or --expr".into())),
        }
    }

    fn bindings<R: Real>(&self) -> Result<Bindings<R>, Failure> {
        let mut b = Bindings::new();
        if let Some(path) = &self.bindings {
            let text = input_file::read(Path::new(path), input_file::TEXT_LIMIT)
                .map_err(|e| Failure::Usage(format!("cannot read {path}: {e}")))?;
            let file = BindingsFile::from_json(&text)
                .map_err(|e| Failure::Usage(format!("{path}: {e}")))?;
            file.apply(&mut b);
        }
        // A flag overrides the file; a name given twice on the command line is a mistake
        // (which one was meant?), not a silent "the last one wins".
        let mut given: Vec<(&str, &str)> = Vec::new();
        for kv in &self.binds {
            let (name, v) = split_binding(kv, "--bind")?;
            once(name, kv, &mut given)?;
            b.scalar(name, R::from_f64(parse_number(v, kv)?));
        }
        for kv in &self.lanes {
            let (name, vs) = split_binding(kv, "--lane")?;
            once(name, kv, &mut given)?;
            let xs = vs
                .split(',')
                .map(|v| parse_number(v.trim(), kv).map(R::from_f64))
                .collect::<Result<Vec<R>, _>>()?;
            b.lanes(name, xs);
        }
        b.lane_count()
            .map_err(|e| Failure::Usage(e.message.clone()))?;
        Ok(b)
    }
}

/// A program file's contents, within the text size limit: bytes for the binary bytecode form,
/// UTF-8 text (checked) otherwise.
pub(crate) fn read_program(path: &str, form: Form) -> Result<Vec<u8>, Failure> {
    if form != Form::Binary {
        return input_file::read(Path::new(path), input_file::TEXT_LIMIT)
            .map(String::into_bytes)
            .map_err(|e| Failure::Usage(format!("cannot read {path}: {e}")));
    }
    input_file::check_kind(Path::new(path))
        .map_err(|e| Failure::Usage(format!("cannot read {path}: {e}")))?;
    let fail = |e: std::io::Error| Failure::Usage(format!("cannot read {path}: {e}"));
    // Read through a bound: a device's size says nothing (`/dev/zero` reports 0 bytes).
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(
            std::fs::File::open(path).map_err(fail)?,
            input_file::TEXT_LIMIT + 1,
        ),
        &mut bytes,
    )
    .map_err(fail)?;
    if bytes.len() as u64 > input_file::TEXT_LIMIT {
        return Err(Failure::Usage(format!(
            "cannot read {path}: over the {} byte limit",
            input_file::TEXT_LIMIT
        )));
    }
    Ok(bytes)
}

/// Records that the flag `kv` binds `name`; an error if an earlier flag bound it already.
fn once<'a>(
    name: &'a str,
    kv: &'a str,
    given: &mut Vec<(&'a str, &'a str)>,
) -> Result<(), Failure> {
    if let Some((_, first)) = given.iter().find(|(n, _)| *n == name) {
        return Err(Failure::Usage(format!(
            "`{name}` is bound twice on the command line: `{first}` and `{kv}`"
        )));
    }
    given.push((name, kv));
    Ok(())
}

fn split_binding<'a>(kv: &'a str, flag: &str) -> Result<(&'a str, &'a str), Failure> {
    kv.split_once('=')
        .filter(|(n, _)| !n.is_empty())
        .ok_or_else(|| Failure::Usage(format!("{flag} expects NAME=VALUE, got `{kv}`")))
}

fn parse_number(v: &str, kv: &str) -> Result<f64, Failure> {
    ndvm_engine::syntax::reader::parse_number(v)
        .map(|l| l.f64)
        .ok_or_else(|| Failure::Usage(format!("`{v}` in `{kv}` is not a number")))
}

pub fn run(args: RunArgs) -> Result<(), Failure> {
    if args.repeat == 0 {
        return Err(Failure::Usage("--repeat must be at least 1".into()));
    }
    if args.device == Device::Gpu && args.precision == Precision::F64 {
        return Err(Failure::Usage(
            "--device gpu computes in f32: use --precision f32".into(),
        ));
    }
    match args.precision {
        Precision::F32 => run_with::<f32>(&args),
        Precision::F64 => run_with::<f64>(&args),
    }
}

fn run_with<R: Real>(args: &RunArgs) -> Result<(), Failure> {
    let form = Form::of(args.program.as_deref().unwrap_or(""), args.bytecode);
    let (name, bytes) = args.source(form)?;
    let bindings = args.bindings::<R>()?;
    let fail = |e: Error, src: &str| {
        say!("{}", diagnostics::render(&e, &name, src));
        if args.json {
            let error = serde_json::json!({ "error": diagnostics::json(&e, src) });
            // A closed standard output is not a second error.
            let _ = output::print(&error.to_string());
        }
        Failure::Program
    };
    let text = String::from_utf8_lossy(&bytes);
    let client = Executable::load(form, &bytes, &bindings.names(), &Registry::default())
        .map_err(|e| fail(e, &text))?;
    let program = client.program();
    // Errors are located in the text the program was read from (a binary's listing).
    let src: &str = match form {
        Form::Binary | Form::Json => client.source(),
        _ => &text,
    };
    let fail = |e: Error| fail(e, src);
    let mut runner = ndvm_bytecode::Runner::new();
    let mut vm = Vm::<R>::new(args.limits());
    let mut times = Vec::with_capacity(args.repeat);
    let mut adapter = None;
    let mut result = None;
    let on_gpu = args.device == Device::Gpu;
    for _ in 0..args.repeat {
        let t = Instant::now();
        // The GPU replays a recorded tape: the walk records one even without --grad.
        let mut e = client
            .evaluate(&mut vm, &mut runner, &bindings, args.grad || on_gpu)
            .map_err(fail)?;
        if on_gpu {
            let (vm, e) = (
                (&mut vm as &mut dyn std::any::Any).downcast_mut::<Vm<f32>>(),
                (&mut e as &mut dyn std::any::Any).downcast_mut::<Evaluation<f32>>(),
            );
            if let (Some(vm), Some(e)) = (vm, e) {
                adapter = Some(gpu_replay(vm, program, e)?);
            }
        }
        if !args.grad {
            e.grads.clear();
        }
        times.push(t.elapsed().as_secs_f64() * 1e6);
        result = Some(e);
    }
    let Some(e) = result else { return Ok(()) };
    let timing = (args.repeat > 1).then(|| {
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        let what = if args.grad {
            "forward+gradient"
        } else {
            "forward"
        };
        say!(
            "{median:.3} µs per evaluation ({what}, median of {} repeats, B = {})",
            args.repeat,
            e.lanes
        );
        (median, args.repeat)
    });
    if args.json {
        let mut json = output::to_json(&e, timing);
        json["device"] = serde_json::json!(adapter.as_deref().unwrap_or("cpu"));
        json["client"] = serde_json::json!(client.client());
        output::print(&json.to_string())
    } else {
        output::print(&output::table(&e))
    }
}

/// Replays the tape `vm` just recorded on the GPU and puts the device's numbers into `e`
/// (lanes whose guards fail there keep the walk's values); returns the adapter's name.
fn gpu_replay(
    vm: &mut Vm<f32>,
    program: &Program,
    e: &mut Evaluation<f32>,
) -> Result<String, Failure> {
    let device = |e: ndvm_gpu::GpuError| {
        say!("error: --device gpu: {e}");
        Failure::Program
    };
    let gpu = ndvm_gpu::Gpu::shared().map_err(device)?;
    let Some(rec) = vm.recording() else {
        say!("error: --device gpu: the result is not numbers, so there is no tape to replay");
        return Err(Failure::Program);
    };
    let mut tape = gpu.upload(&rec).map_err(device)?;
    let run = tape.run(&gpu, &rec, true).map_err(device)?;
    let b = e.lanes;
    let held = |l: usize| run.failed.binary_search(&(l as u32)).is_err();
    match &mut e.result {
        Output::Numbers(xs) => {
            for (l, x) in xs.iter_mut().enumerate().filter(|(l, _)| held(*l)) {
                *x = run.result[l];
            }
        }
        Output::Vector(data) | Output::Matrix { data, .. } => {
            for (l, lane) in data.iter_mut().enumerate().filter(|(l, _)| held(*l)) {
                for (k, x) in lane.iter_mut().enumerate() {
                    *x = run.result[k * b + l];
                }
            }
        }
        Output::Data(_) => {}
    }
    for (name, g) in &mut e.grads {
        let i = program
            .inputs
            .iter()
            .position(|n| n.as_str() == name.as_str());
        let Some(dev) = i.and_then(|i| run.grads.get(i)).filter(|d| !d.is_empty()) else {
            continue;
        };
        for (l, x) in g.iter_mut().enumerate().filter(|(l, _)| held(*l)) {
            *x = dev[l];
        }
    }
    if !run.failed.is_empty() {
        say!(
            "gpu: {} lane(s) failed a guard on the device; their values are the CPU walk's",
            run.failed.len()
        );
    }
    Ok(gpu.describe())
}
