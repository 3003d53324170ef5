//! `ndvm._ndvm`: the native half of the Python package `ndvm` (the pure-Python half, in
//! `python/ndvm/`, adds the PyTorch, JAX and Ray wrappers).
//!
//! A [`Program`] decodes once and keeps its evaluators, so repeated calls replay the recorded
//! tape; numpy arrays go in and out (lanes as the leading axis); every engine error becomes an
//! `ndvm.NdvmError` subclass with its kind, line and column; the GIL is released around engine
//! work.

use ndvm_engine::prelude::*;
use ndvm_engine::{Binding, Replay};
use numpy::{PyArray1, PyArray2, PyArray3, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::{PyDict, PyFloat, PyInt};
use std::path::Path;
use std::sync::Mutex;

mod interrupt;
mod shard;

create_exception!(
    _ndvm,
    NdvmError,
    PyException,
    "An ndvm program or input error."
);
create_exception!(
    _ndvm,
    SyntaxError,
    NdvmError,
    "The program does not read or decode."
);
create_exception!(_ndvm, UnboundError, NdvmError, "A name with no binding.");
create_exception!(
    _ndvm,
    ArityError,
    NdvmError,
    "A call with the wrong operand count."
);
create_exception!(_ndvm, TypeError, NdvmError, "A value of the wrong kind.");
create_exception!(
    _ndvm,
    ShapeError,
    NdvmError,
    "Tensor shapes that do not fit."
);
create_exception!(
    _ndvm,
    DivergenceError,
    NdvmError,
    "Lanes whose structure differs."
);
create_exception!(
    _ndvm,
    LimitError,
    NdvmError,
    "A resource limit was exceeded."
);
create_exception!(
    _ndvm,
    InputError,
    NdvmError,
    "Bad inputs (a missing name, ragged lanes, a wrong dtype)."
);

/// The Python exception for an engine error: the kind's class, with `kind`, `message`,
/// `line`, `column` (None when unlocated) and `lanes` attributes.
fn py_err(py: Python<'_>, e: &Error, src: &str) -> PyErr {
    let rendered = e.render(src);
    let err = match e.kind {
        ErrorKind::Syntax => SyntaxError::new_err(rendered),
        ErrorKind::Unbound => UnboundError::new_err(rendered),
        ErrorKind::Arity => ArityError::new_err(rendered),
        ErrorKind::Type => TypeError::new_err(rendered),
        ErrorKind::Shape => ShapeError::new_err(rendered),
        ErrorKind::Divergence => DivergenceError::new_err(rendered),
        ErrorKind::Limit => LimitError::new_err(rendered),
        ErrorKind::Input => InputError::new_err(rendered),
    };
    let value = err.value(py);
    let (line, column) = match e.span {
        Some(s) => {
            let (l, c) = s.line_col(src);
            (Some(l), Some(c))
        }
        None => (None, None),
    };
    let _ = value.setattr("kind", e.kind.name());
    let _ = value.setattr("message", e.message.clone());
    let _ = value.setattr("line", line);
    let _ = value.setattr("column", column);
    let _ = value.setattr("lanes", e.lanes.clone());
    err
}

pub(crate) fn input_err(msg: impl Into<String>) -> PyErr {
    InputError::new_err(msg.into())
}

/// Resource limits from keyword arguments (defaults where absent).
fn limits(
    max_steps: Option<u64>,
    max_heap_cells: Option<u64>,
    max_tape_nodes: Option<u64>,
    max_depth: Option<u64>,
    max_payload_bytes: Option<u64>,
) -> Limits {
    let d = Limits::default();
    Limits {
        eval_steps: max_steps.unwrap_or(d.eval_steps),
        heap_cells: max_heap_cells.unwrap_or(d.heap_cells),
        tape_nodes: max_tape_nodes.unwrap_or(d.tape_nodes),
        recursion_depth: max_depth.unwrap_or(d.recursion_depth),
        payload_bytes: max_payload_bytes.unwrap_or(d.payload_bytes),
    }
}

/// One precision's evaluator, kept between calls (so a repeated call replays), and the
/// structure its last recorded walk was made for (input kinds and shapes, lanes).
struct Evaluator<R: Real> {
    vm: Vm<R>,
    shape: Option<u64>,
}

impl<R: Real + numpy::Element> Evaluator<R> {
    fn new() -> Self {
        Evaluator {
            vm: Vm::default(),
            shape: None,
        }
    }

    /// Reads `inputs`/`constants` and evaluates under `lim` (a fresh evaluator when the limits
    /// changed), with the GIL released when the work is worth it; the result as a dict.
    #[allow(clippy::too_many_arguments)]
    fn evaluate<'py>(
        &mut self,
        py: Python<'py>,
        program: &ndvm_engine::Program,
        inputs: &Bound<'py, PyDict>,
        constants: Option<&Bound<'py, PyDict>>,
        grad: bool,
        lim: Limits,
    ) -> PyResult<Bound<'py, PyDict>> {
        let b = read_bindings::<R>(inputs, constants)?;
        if self.vm.limits != lim {
            *self = Evaluator {
                vm: Vm::new(lim),
                shape: None,
            };
        }
        let (vm, shape) = (&mut self.vm, &mut self.shape);
        let e = if worth_detaching(vm, *shape, &b) {
            py.detach(|| run(vm, shape, program, &b, grad))
        } else {
            run(vm, shape, program, &b, grad)
        };
        let e = e.map_err(|e| py_err(py, &e, &program.source))?;
        to_py(py, e)
    }

    /// Seconds per call of the engine work alone, `n` calls after one warm-up.
    fn native_seconds(
        &mut self,
        py: Python<'_>,
        program: &ndvm_engine::Program,
        b: &Bindings<R>,
        (grad, n): (bool, usize),
    ) -> PyResult<f64> {
        let (vm, shape) = (&mut self.vm, &mut self.shape);
        let t = py.detach(|| -> Result<f64> {
            run(vm, shape, program, b, grad)?;
            let t = std::time::Instant::now();
            for _ in 0..n {
                std::hint::black_box(run(vm, shape, program, b, grad)?);
            }
            Ok(t.elapsed().as_secs_f64() / n.max(1) as f64)
        });
        t.map_err(|e| py_err(py, &e, &program.source))
    }
}

/// One evaluator per precision.
struct Evaluators {
    f32: Evaluator<f32>,
    f64: Evaluator<f64>,
}

/// A decoded program with its evaluators.
///
/// ```python
/// p = ndvm.Program("(* a (exp (- (* b t))))", ["a", "b", "t"])
/// out = p.evaluate({"a": np.array([1.0, 2.0]), "b": 0.5}, constants={"t": 2.0})
/// out["result"], out["grads"]["a"]
/// ```
#[pyclass(module = "ndvm._ndvm")]
struct Program {
    program: ndvm_engine::Program,
    evaluators: Mutex<Evaluators>,
}

/// Bindings read from Python: (name, value, differentiable).
type Read<R> = Vec<Binding<R>>;

/// A float64 or float32 array's shape and values (`None` for anything else). Contiguous
/// float64 arrays, the common case, are read straight from their buffer.
fn read_array<R: Real>(v: &Bound<'_, PyAny>) -> Option<(Vec<usize>, Vec<R>)> {
    let to = |x: f64| R::from_f64(x);
    if let Ok(a) = v.cast::<numpy::PyArrayDyn<f64>>() {
        let a = a.readonly();
        // Row-major order whatever the array's memory layout (`as_slice` would also take a
        // Fortran-ordered buffer, column by column).
        let data = match a.as_slice() {
            Ok(s) if a.is_c_contiguous() => s.iter().map(|&x| to(x)).collect(),
            _ => a.as_array().iter().map(|&x| to(x)).collect(),
        };
        return Some((a.shape().to_vec(), data));
    }
    let a = v.cast::<numpy::PyArrayDyn<f32>>().ok()?.readonly();
    let data = a.as_array().iter().map(|&x| to(f64::from(x))).collect();
    Some((a.shape().to_vec(), data))
}

/// Reads one binding: a number (a parameter shared by every lane), a 1-D array (one value
/// per lane), a 2-D array (a matrix shared by every lane, data) or a 3-D array (a matrix per
/// lane, data).
fn read_value<R: Real + numpy::Element>(
    name: &str,
    v: &Bound<'_, PyAny>,
    param: bool,
    out: &mut Read<R>,
) -> PyResult<()> {
    let to = |x: f64| R::from_f64(x);
    let value = if v.is_instance_of::<PyFloat>() || v.is_instance_of::<PyInt>() {
        let x: f64 = v.extract()?;
        Input::Scalar(to(x))
    } else if let Some((shape, data)) = read_array::<R>(v) {
        if shape.len() >= 2 && param {
            return Err(input_err(format!(
                "`{name}`: a {}-D array is data (matrices get no gradient): pass it in `constants`",
                shape.len()
            )));
        }
        match shape.len() {
            0 => match data.first() {
                Some(&x) => Input::Scalar(x),
                None => return Err(input_err(format!("`{name}`: an empty array"))),
            },
            1 => Input::Lanes(data),
            2 => Input::Matrix {
                rows: shape[0],
                cols: shape[1],
                data,
            },
            3 => {
                let n = shape[1] * shape[2];
                Input::LaneMatrices {
                    rows: shape[1],
                    cols: shape[2],
                    data: data.chunks(n.max(1)).map(<[R]>::to_vec).collect(),
                }
            }
            d => {
                return Err(input_err(format!(
                    "`{name}`: arrays of {d} dimensions are not inputs (0 to 3)"
                )));
            }
        }
    } else if let Ok(a) = v.cast::<numpy::PyUntypedArray>() {
        return Err(input_err(format!(
            "`{name}`: expected a float32 or float64 array, got dtype {}",
            a.dtype()
        )));
    } else if let Ok(xs) = v.extract::<Vec<f64>>() {
        Input::Lanes(xs.into_iter().map(to).collect())
    } else {
        return Err(input_err(format!(
            "`{name}`: expected a number or a numpy array, got {}",
            v.get_type().name()?
        )));
    };
    out.push(Binding {
        name: name.to_string(),
        value,
        param,
    });
    Ok(())
}

fn read_bindings<R: Real + numpy::Element>(
    inputs: &Bound<'_, PyDict>,
    constants: Option<&Bound<'_, PyDict>>,
) -> PyResult<Bindings<R>> {
    let mut items = Vec::with_capacity(inputs.len());
    for (k, v) in inputs.iter() {
        let name: String = k.extract()?;
        read_value::<R>(&name, &v, true, &mut items)?;
    }
    if let Some(c) = constants {
        for (k, v) in c.iter() {
            let name: String = k.extract()?;
            read_value::<R>(&name, &v, false, &mut items)?;
        }
    }
    for b in &items {
        let bad = |x: &R| !x.is_finite();
        let any_bad = match &b.value {
            Input::Scalar(x) => bad(x),
            Input::Lanes(xs) | Input::Matrix { data: xs, .. } => xs.iter().any(bad),
            Input::LaneMatrices { data, .. } => data.iter().flatten().any(bad),
        };
        if any_bad {
            return Err(input_err(format!(
                "`{}`: NaN or infinite input values",
                b.name
            )));
        }
    }
    let mut b = Bindings::new();
    b.items = items;
    Ok(b)
}

/// The structure a replay needs unchanged (names, kinds, sizes, which are parameters), as a
/// hash: computed without allocating on every call.
fn shape_of<R: Real>(b: &Bindings<R>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for i in &b.items {
        i.name.hash(&mut h);
        i.param.hash(&mut h);
        match &i.value {
            Input::Scalar(_) => 0u8.hash(&mut h),
            Input::Lanes(xs) => (1u8, xs.len()).hash(&mut h),
            Input::Matrix { rows, cols, .. } => (2u8, *rows, *cols).hash(&mut h),
            Input::LaneMatrices { rows, cols, data } => {
                (3u8, *rows, *cols, data.len()).hash(&mut h)
            }
        }
    }
    h.finish()
}

/// Whether a call is long enough to be worth releasing the GIL for: any walk, and replays of
/// big tapes or many lanes. (Releasing and retaking it costs about as much as replaying a small
/// tape once; a short replay keeps it.)
fn worth_detaching<R: Real>(vm: &Vm<R>, shape: Option<u64>, b: &Bindings<R>) -> bool {
    let replays = shape.is_some_and(|s| s == shape_of(b)) && vm.can_replay();
    !replays || vm.lanes() > 16 || vm.stats().tape_nodes > 512
}

/// Evaluates on `vm`, replaying its last recorded walk when the structure is the same.
fn run<R: Real>(
    vm: &mut Vm<R>,
    shape: &mut Option<u64>,
    program: &ndvm_engine::Program,
    b: &Bindings<R>,
    grad: bool,
) -> Result<Evaluation<R>> {
    let s = shape_of(b);
    if grad
        && *shape == Some(s)
        && vm.can_replay()
        && let Replay::Held(v) = vm.replay(program, b)
    {
        return Ok(vm.evaluation(program, b, v, true));
    }
    let out = evaluate(vm, program, b, grad);
    *shape = (grad && out.is_ok()).then_some(s);
    out
}

/// The evaluation as a dict of numpy arrays.
fn to_py<'py, R: Real + numpy::Element>(
    py: Python<'py>,
    e: Evaluation<R>,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item(pyo3::intern!(py, "lanes"), e.lanes)?;
    match e.result {
        Output::Numbers(xs) => {
            d.set_item(pyo3::intern!(py, "result"), PyArray1::from_vec(py, xs))?
        }
        Output::Vector(rows) => {
            d.set_item(pyo3::intern!(py, "result"), PyArray2::from_vec2(py, &rows)?)?
        }
        Output::Matrix { rows, cols, data } => {
            let nested: Vec<Vec<Vec<R>>> = data
                .into_iter()
                .map(|m| m.chunks(cols.max(1)).map(<[R]>::to_vec).collect())
                .collect();
            let a = if rows == 0 || cols == 0 {
                PyArray3::<R>::zeros(py, [nested.len(), rows, cols], false)
            } else {
                PyArray3::from_vec3(py, &nested)?
            };
            d.set_item(pyo3::intern!(py, "result"), a)?;
        }
        Output::Data(items) => d.set_item(pyo3::intern!(py, "result"), items)?,
    }
    let grads = PyDict::new(py);
    for (name, g) in e.grads {
        grads.set_item(name, PyArray1::from_vec(py, g))?;
    }
    d.set_item(pyo3::intern!(py, "grads"), grads)?;
    Ok(d)
}

impl Program {
    /// The evaluators, locked. The lock detaches while it waits: another thread evaluating this
    /// program holds it with the GIL released and must be able to take the GIL back. A panic
    /// cannot leave an evaluator half-updated in a way a later call would trust (a replay checks
    /// its structure first), so a poisoned lock is taken over.
    fn evaluators(&self, py: Python<'_>) -> std::sync::MutexGuard<'_, Evaluators> {
        self.evaluators
            .lock_py_attached(py)
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[pymethods]
impl Program {
    /// Decodes `src` against the input names (once; a located error raises a `NdvmError`
    /// subclass with `line` and `column`).
    #[new]
    fn new(py: Python<'_>, src: &str, inputs: Vec<String>) -> PyResult<Self> {
        let names: Vec<&str> = inputs.iter().map(String::as_str).collect();
        let program = ndvm_engine::Program::new(src, &names).map_err(|e| py_err(py, &e, src))?;
        Ok(Program {
            program,
            evaluators: Mutex::new(Evaluators {
                f32: Evaluator::new(),
                f64: Evaluator::new(),
            }),
        })
    }

    /// The input names, in binding order.
    #[getter]
    fn inputs(&self) -> Vec<String> {
        self.program.inputs.clone()
    }

    /// The program text.
    #[getter]
    fn source(&self) -> String {
        self.program.source.to_string()
    }

    /// Evaluates over lanes: `inputs` maps each differentiable input to a number (shared by every
    /// lane) or a 1-D array (one value per lane); `constants` the inputs that get no gradient
    /// (numbers, per-lane 1-D arrays, 2-D matrices, 3-D per-lane matrices). Returns
    /// `{"lanes": B, "result": array, "grads": {name: array}}`.
    #[pyo3(signature = (inputs, grad=true, precision="f32", constants=None, *, max_steps=None,
        max_heap_cells=None, max_tape_nodes=None, max_depth=None, max_payload_bytes=None))]
    #[allow(clippy::too_many_arguments)]
    fn evaluate<'py>(
        &self,
        py: Python<'py>,
        inputs: &Bound<'py, PyDict>,
        grad: bool,
        precision: &str,
        constants: Option<&Bound<'py, PyDict>>,
        max_steps: Option<u64>,
        max_heap_cells: Option<u64>,
        max_tape_nodes: Option<u64>,
        max_depth: Option<u64>,
        max_payload_bytes: Option<u64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let lim = limits(
            max_steps,
            max_heap_cells,
            max_tape_nodes,
            max_depth,
            max_payload_bytes,
        );
        let mut ev = self.evaluators(py);
        match precision {
            "f32" => ev
                .f32
                .evaluate(py, &self.program, inputs, constants, grad, lim),
            "f64" => ev
                .f64
                .evaluate(py, &self.program, inputs, constants, grad, lim),
            other => Err(pyo3::exceptions::PyValueError::new_err(format!(
                "precision must be \"f32\" or \"f64\", got {other:?}"
            ))),
        }
    }

    /// Seconds per call of the engine work `evaluate` does for these inputs, measured natively
    /// (no Python in the loop): `n` calls after one warm-up. What the overhead benchmark
    /// subtracts (python/bench/overhead.py).
    #[pyo3(signature = (inputs, n, grad=true, precision="f32", constants=None))]
    fn native_seconds(
        &self,
        py: Python<'_>,
        inputs: &Bound<'_, PyDict>,
        n: usize,
        grad: bool,
        precision: &str,
        constants: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<f64> {
        let mut ev = self.evaluators(py);
        if precision == "f64" {
            let b = read_bindings::<f64>(inputs, constants)?;
            ev.f64.native_seconds(py, &self.program, &b, (grad, n))
        } else {
            let b = read_bindings::<f32>(inputs, constants)?;
            ev.f32.native_seconds(py, &self.program, &b, (grad, n))
        }
    }

    fn __repr__(&self) -> String {
        format!("ndvm.Program(inputs={:?})", self.program.inputs)
    }
}

/// Reads a scene: `text` is RON (a `.scene.ron` file's text) or JSON (a scene as a dict); either
/// way with the checks and messages of `ndvm fit` and `ndvm search`.
pub(crate) fn scene_of(text: &str, json: bool) -> Result<ndvm_components::scene::Scene, String> {
    use ndvm_components::scene::Scene;
    if json {
        let scene: Scene = serde_json::from_str(text).map_err(|e| format!("scene: {e}"))?;
        scene.checked().map_err(|e| format!("scene: {e}"))
    } else {
        Scene::from_ron(text).map_err(|e| e.to_string())
    }
}

/// Fits a scene (or shard `shard` of `num_shards` of its candidates, by candidate index) and
/// returns the results JSON of `ndvm fit --out` without timing.
#[pyfunction]
#[pyo3(signature = (scene, base, json=false, threads=None, shard=None, num_shards=None))]
fn fit_json(
    py: Python<'_>,
    scene: &str,
    base: &str,
    json: bool,
    threads: Option<usize>,
    shard: Option<usize>,
    num_shards: Option<usize>,
) -> PyResult<String> {
    use ndvm_systems::prelude::*;
    match (shard, num_shards) {
        (None, None) => {}
        (Some(k), Some(n)) if k < n => {}
        _ => {
            return Err(input_err(format!(
                "give both `shard` and `num_shards`, with 0 <= shard < num_shards (got {shard:?} of {num_shards:?})"
            )));
        }
    }
    let scene = scene_of(scene, json).map_err(input_err)?;
    let base = Path::new(base).to_path_buf();
    let out = interrupt::interruptible(py, move |flag| -> Result<String, String> {
        let options = FitOptions {
            threads,
            interrupted: Some(flag),
            ..FitOptions::default()
        };
        let part = shard.zip(num_shards);
        ndvm_systems::report::parts::fit(&scene, &base, part, &options)
    })?;
    out.map_err(input_err)
}

/// Merges shard results (each from [`fit_json`]) into what one process would have written:
/// candidates in index order, the ranking recomputed, the device kept (every device the shards
/// ran on, as a list, when they differ).
#[pyfunction]
fn merge_results(parts: Vec<String>) -> PyResult<String> {
    ndvm_systems::report::parts::merge(&parts).map_err(input_err)
}

/// Runs a search scene (`ndvm search`) and returns its results JSON.
#[pyfunction]
#[pyo3(signature = (scene, base, json=false, threads=None, calibrations=None, seconds=None))]
fn search_json(
    py: Python<'_>,
    scene: &str,
    base: &str,
    json: bool,
    threads: Option<usize>,
    calibrations: Option<u64>,
    seconds: Option<f64>,
) -> PyResult<String> {
    use ndvm_search::{Search, SearchOptions};
    if let Some(s) = seconds {
        ndvm_components::limits::check_seconds("seconds", s).map_err(input_err)?;
    }
    let scene = scene_of(scene, json).map_err(input_err)?;
    let base = Path::new(base).to_path_buf();
    let out = interrupt::interruptible(py, move |flag| -> Result<String, String> {
        let options = SearchOptions {
            threads,
            calibrations,
            seconds,
            interrupted: Some(flag),
            ..SearchOptions::default()
        };
        let mut search = Search::new(&scene, &base, &options).map_err(|e| e.to_string())?;
        let report = search.run(|_| {});
        serde_json::to_string_pretty(&report).map_err(|e| e.to_string())
    })?;
    out.map_err(input_err)
}

#[pymodule]
fn _ndvm(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<Program>()?;
    m.add_function(wrap_pyfunction!(fit_json, m)?)?;
    m.add_function(wrap_pyfunction!(merge_results, m)?)?;
    m.add_function(wrap_pyfunction!(search_json, m)?)?;
    m.add_function(wrap_pyfunction!(shard::search_plan, m)?)?;
    m.add_function(wrap_pyfunction!(shard::search_tasks, m)?)?;
    m.add_function(wrap_pyfunction!(shard::search_shard, m)?)?;
    m.add_function(wrap_pyfunction!(shard::search_merge, m)?)?;
    m.add_function(wrap_pyfunction!(shard::search_local, m)?)?;
    m.add("NdvmError", py.get_type::<NdvmError>())?;
    m.add("SyntaxError", py.get_type::<SyntaxError>())?;
    m.add("UnboundError", py.get_type::<UnboundError>())?;
    m.add("ArityError", py.get_type::<ArityError>())?;
    m.add("TypeError", py.get_type::<TypeError>())?;
    m.add("ShapeError", py.get_type::<ShapeError>())?;
    m.add("DivergenceError", py.get_type::<DivergenceError>())?;
    m.add("LimitError", py.get_type::<LimitError>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    Ok(())
}
