//! The device: one adapter, one queue, the interpreter's pipeline.
//!
//! [`Gpu::new`] picks the best adapter wgpu finds (a discrete GPU first; Mesa's software Vulkan
//! driver, lavapipe, where no GPU is installed) and asks for its largest storage buffers, so a
//! chunk of lanes is as wide as the device allows. Every error the device raises is captured —
//! a validation error, running out of memory, a lost device — and returned as a [`GpuError`];
//! nothing panics.

use crate::kernel::{Entry, Kernel, Segmenting};
use ndvm_engine::prims::compare::Cmp;
use ndvm_engine::prims::scalar::Op;
use ndvm_engine::tape::Form;
use std::io::{Read, Write};
use std::sync::{Arc, Mutex, OnceLock};

/// What went wrong on the device side.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GpuError {
    #[error(
        "no GPU adapter was found (wgpu saw none; install a Vulkan driver, e.g. Debian's mesa-vulkan-drivers)"
    )]
    NoAdapter,
    #[error("the GPU adapter refused a device: {0}")]
    NoDevice(String),
    #[error("this tape cannot run on the GPU: {0}")]
    Unsupported(String),
    #[error("the GPU device was lost or failed: {0}")]
    Lost(String),
}

/// An adapter's device with the interpreter loaded.
#[derive(Debug)]
pub struct Gpu {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    /// The interpreter, and each entry's pipeline once a tape needs it: the per-lane entry
    /// (`main`, compiled when the device opens), the cooperative one (`main_coop`) and the
    /// node-major one (`main_batched`), see [`Kernel`]. Compiling the cooperative entry is
    /// most of the time opening takes (0.5 of 0.7 s on lavapipe), and most fits never run it.
    module: wgpu::ShaderModule,
    pipeline_layout: wgpu::PipelineLayout,
    pipelines: [OnceLock<Result<wgpu::ComputePipeline, GpuError>>; 3],
    pub(crate) layout: wgpu::BindGroupLayout,
    /// How long one dispatch may run on this adapter.
    pub(crate) segmenting: Segmenting,
    pub(crate) limits: wgpu::Limits,
    /// The most bytes one tape's lanes keep on the device at once (primal, adjoint, scratch):
    /// a broadcast tape over more lanes runs them a slice at a time through one set of buffers.
    pub(crate) resident: u64,
    /// The entry [`Kernel::Auto`] uploads run with: `NDVM_GPU_KERNEL` (`lane`, `coop`,
    /// `batched`) when set, for measuring an entry on a whole fit; else `Auto`'s own choice.
    pub(crate) prefer: Kernel,
    info: wgpu::AdapterInfo,
    /// The first error the device reported outside an error scope (a lost device).
    lost: Arc<Mutex<Option<String>>>,
}

/// An adapter as [`Gpu::probe`] finds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Adapter {
    /// E.g. "NVIDIA H100 80GB HBM3 (Vulkan)".
    pub name: String,
    /// A CPU emulating a GPU (Mesa's lavapipe): correct, never fast.
    pub software: bool,
}

impl Adapter {
    fn of(info: &wgpu::AdapterInfo) -> Adapter {
        Adapter {
            name: format!("{} ({:?})", info.name, info.backend),
            software: is_cpu(info),
        }
    }
}

/// Whether an adapter is a CPU emulating a GPU (Mesa's lavapipe).
fn is_cpu(info: &wgpu::AdapterInfo) -> bool {
    info.device_type == wgpu::DeviceType::Cpu
}

/// The interpreter's source: the engine's op, form and comparison codes, then the fixed WGSL.
pub fn shader_source() -> String {
    let mut s = String::new();
    let ops = [
        (Op::Sin, "SIN"),
        (Op::Cos, "COS"),
        (Op::Tan, "TAN"),
        (Op::Asin, "ASIN"),
        (Op::Acos, "ACOS"),
        (Op::Atan, "ATAN"),
        (Op::Sinh, "SINH"),
        (Op::Cosh, "COSH"),
        (Op::Tanh, "TANH"),
        (Op::Exp, "EXP"),
        (Op::Log, "LOG"),
        (Op::Sqrt, "SQRT"),
        (Op::Abs, "ABS"),
        (Op::Square, "SQUARE"),
        (Op::Floor, "FLOOR"),
        (Op::Ceiling, "CEILING"),
        (Op::Round, "ROUND"),
        (Op::Truncate, "TRUNCATE"),
        (Op::Copy, "COPY"),
        (Op::Add, "ADD"),
        (Op::Add0, "ADD0"),
        (Op::Sub, "SUB"),
        (Op::Mul, "MUL"),
        (Op::Div, "DIV"),
        (Op::Pow, "POW"),
        (Op::Min, "MIN"),
        (Op::Max, "MAX"),
        (Op::Modulo, "MODULO"),
        (Op::Remainder, "REMAINDER"),
        (Op::Atan2, "ATAN2"),
        (Op::Select, "SELECT"),
        (Op::Dot, "DOT"),
        (Op::Cross, "CROSS"),
        (Op::Norm, "NORM"),
        (Op::Normalize, "NORMALIZE"),
        (Op::VSum, "VSUM"),
        (Op::Trace, "TRACE"),
        (Op::Transpose, "TRANSPOSE"),
        (Op::MatMul, "MATMUL"),
        (Op::MatVec, "MATVEC"),
        (Op::Outer, "OUTER"),
        (Op::Det, "DET"),
        (Op::LogDet, "LOGDET"),
        (Op::Inv, "INV"),
    ];
    for (op, name) in ops {
        s += &format!("const OP_{name}: u32 = {}u;\n", op as u32);
    }
    let forms = [
        (Form::Unary, "UNARY"),
        (Form::SlotSlot, "SLOT_SLOT"),
        (Form::SlotConst, "SLOT_CONST"),
        (Form::ConstSlot, "CONST_SLOT"),
        (Form::ConstConst, "CONST_CONST"),
    ];
    for (f, name) in forms {
        s += &format!("const FORM_{name}: u32 = {}u;\n", f as u32);
    }
    for (c, name) in [
        (Cmp::Eq, "EQ"),
        (Cmp::Lt, "LT"),
        (Cmp::Gt, "GT"),
        (Cmp::Le, "LE"),
        (Cmp::Ge, "GE"),
    ] {
        s += &format!("const CMP_{name}: u32 = {}u;\n", c as u32);
    }
    s += &format!(
        "const WSIZE: u32 = {}u;\nconst BATCH: u32 = {}u;\n",
        crate::encode::WORKGROUP_FLOATS,
        crate::encode::BATCH
    );
    s += include_str!("interp.wgsl");
    s += include_str!("linalg.wgsl");
    s += include_str!("batched.wgsl");
    s += include_str!("coop.wgsl");
    s
}

impl Gpu {
    /// The best adapter's device with the interpreter compiled, or why there is none.
    pub fn new() -> Result<Gpu, GpuError> {
        pollster::block_on(Self::open(Self::found()?))
    }

    /// The process's device, opened once (opening compiles the interpreter) and shared by
    /// every fit, search and run of the process.
    pub fn shared() -> Result<Arc<Gpu>, GpuError> {
        static GPU: OnceLock<Result<Arc<Gpu>, GpuError>> = OnceLock::new();
        GPU.get_or_init(|| Gpu::new().map(Arc::new)).clone()
    }

    /// The adapter [`Gpu::shared`] would open, found without opening it (no device, no
    /// compiled interpreter): what `auto` looks at before any work says the device would win.
    /// Found once per process.
    pub fn probe() -> Result<Adapter, GpuError> {
        Self::found().map(|a| Adapter::of(&a.get_info()))
    }

    /// The best adapter, looked for once per process (a Vulkan instance and its adapters:
    /// ~30 ms); [`Gpu::probe`] and every device opened share it.
    fn found() -> Result<wgpu::Adapter, GpuError> {
        static FOUND: OnceLock<Result<wgpu::Adapter, GpuError>> = OnceLock::new();
        FOUND
            .get_or_init(|| quiet_loader(|| pollster::block_on(Self::adapter())))
            .clone()
    }

    /// The best adapter: a discrete GPU first.
    async fn adapter() -> Result<wgpu::Adapter, GpuError> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends: wgpu::Backends::PRIMARY,
            ..wgpu::InstanceDescriptor::new_without_display_handle()
        });
        instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                force_fallback_adapter: false,
                compatible_surface: None,
                ..Default::default()
            })
            .await
            .map_err(|_| GpuError::NoAdapter)
    }

    async fn open(adapter: wgpu::Adapter) -> Result<Gpu, GpuError> {
        let info = adapter.get_info();
        let have = adapter.limits();
        let limits = wgpu::Limits {
            max_storage_buffer_binding_size: have.max_storage_buffer_binding_size,
            max_buffer_size: have.max_buffer_size,
            max_storage_buffers_per_shader_stage: 6
                .max(wgpu::Limits::downlevel_defaults().max_storage_buffers_per_shader_stage),
            max_compute_workgroups_per_dimension: have.max_compute_workgroups_per_dimension,
            ..wgpu::Limits::downlevel_defaults()
        };
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("ndvm"),
                required_limits: limits.clone(),
                ..Default::default()
            })
            .await
            .map_err(|e| GpuError::NoDevice(e.to_string()))?;
        let lost = Arc::new(Mutex::new(None));
        let sink = lost.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            if let Ok(mut l) = sink.lock() {
                l.get_or_insert_with(|| e.to_string());
            }
        }));
        let sink = lost.clone();
        device.set_device_lost_callback(move |_, msg| {
            if let Ok(mut l) = sink.lock() {
                l.get_or_insert_with(|| format!("device lost: {msg}"));
            }
        });
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("ndvm interpreter"),
            source: wgpu::ShaderSource::Wgsl(shader_source().into()),
        });
        let storage = |binding: u32, read_only: bool| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        // The parameters of every dispatch of a chunk sit in one buffer, each at its own
        // offset (given at the dispatch): one bind group serves them all.
        let mut entries = vec![wgpu::BindGroupLayoutEntry {
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: true,
                min_binding_size: None,
            },
            ..storage(0, true)
        }];
        entries.extend([storage(1, true), storage(2, true)]);
        entries.extend((3..7).map(|b| storage(b, false)));
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("ndvm interpreter"),
            entries: &entries,
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("ndvm interpreter"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        if let Some(e) = scope.pop().await {
            return Err(GpuError::NoDevice(format!(
                "the interpreter did not compile: {e}"
            )));
        }
        let software = is_cpu(&info);
        let segmenting = Segmenting::of(software);
        let gpu = Gpu {
            device,
            queue,
            module,
            pipeline_layout,
            pipelines: Default::default(),
            layout,
            segmenting,
            limits,
            resident: resident_bytes(software),
            prefer: Kernel::preferred(),
            info,
            lost,
        };
        match gpu.pipeline(Entry::Lane) {
            Ok(_) => Ok(gpu),
            Err(e) => Err(GpuError::NoDevice(e.to_string())),
        }
    }

    /// An entry's pipeline, compiled the first time a tape needs it. An entry the adapter does
    /// not compile is [`GpuError::Unsupported`] for every tape that needs it (they stay on the
    /// CPU); the per-lane entry is compiled when the device opens.
    pub(crate) fn pipeline(&self, entry: Entry) -> Result<wgpu::ComputePipeline, GpuError> {
        let slot = &self.pipelines[entry as usize];
        slot.get_or_init(|| {
            let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
            let pipeline = self
                .device
                .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(entry.name()),
                    layout: Some(&self.pipeline_layout),
                    module: &self.module,
                    entry_point: Some(entry.name()),
                    compilation_options: Default::default(),
                    cache: None,
                });
            match pollster::block_on(scope.pop()) {
                Some(e) => Err(GpuError::Unsupported(format!(
                    "the interpreter's `{}` entry did not compile on this adapter: {e}",
                    entry.name()
                ))),
                None => Ok(pipeline),
            }
        })
        .clone()
    }

    /// The adapter, e.g. "NVIDIA H100 80GB HBM3 (Vulkan)".
    pub fn describe(&self) -> String {
        Adapter::of(&self.info).name
    }

    /// Whether the adapter is a CPU emulating a GPU (Mesa's lavapipe): correct, never fast.
    pub fn is_software(&self) -> bool {
        is_cpu(&self.info)
    }

    /// The most bytes one tape's lanes keep on the device at once (`NDVM_GPU_MEMORY_MB`, else
    /// 16 GiB on a hardware GPU and 1 GiB on a software one): a broadcast tape over more lanes
    /// runs them a slice at a time.
    pub fn resident_bytes(&self) -> u64 {
        self.resident
    }

    /// Sets [`Gpu::resident_bytes`] for tapes uploaded from now on.
    pub fn set_resident_bytes(&mut self, bytes: u64) {
        self.resident = bytes.max(1);
    }

    /// The largest storage buffer one binding may see (a chunk of lanes fits it).
    pub fn max_binding_bytes(&self) -> u64 {
        self.limits.max_storage_buffer_binding_size
    }

    /// Loses the device on purpose (tests: what a run does when the GPU goes away).
    pub fn destroy(&self) {
        self.device.destroy();
    }

    /// An error the device reported since it was opened, if any.
    pub(crate) fn failure(&self) -> Option<String> {
        self.lost.lock().ok().and_then(|l| l.clone())
    }
}

/// Lines the Vulkan stack prints on standard error that say nothing to a user: without a
/// desktop session, Mesa's software driver asks libwayland for a display, which complains about
/// `XDG_RUNTIME_DIR` — twice per process.
const LOADER_NOISE: [&str; 1] = ["XDG_RUNTIME_DIR is invalid or not set"];

/// Runs `find` (creating the instance and choosing the adapter: where the noise is printed) with
/// standard error captured, then passes on every line but [`LOADER_NOISE`] — also when `find`
/// panics. The C libraries write to file descriptor 2 directly, so only a redirect of the
/// descriptor catches them; if it cannot be redirected (another redirect is active), `find`
/// runs as is.
fn quiet_loader<T>(find: impl FnOnce() -> T) -> T {
    /// Passes the captured text on when dropped.
    struct Forward(Option<gag::BufferRedirect>);
    impl Drop for Forward {
        fn drop(&mut self) {
            let Some(mut captured) = self.0.take() else {
                return;
            };
            let mut bytes = Vec::new();
            let _ = captured.read_to_end(&mut bytes);
            drop(captured);
            let text = String::from_utf8_lossy(&bytes);
            let kept: String = text
                .split_inclusive('\n')
                .filter(|l| !LOADER_NOISE.iter().any(|n| l.contains(n)))
                .collect();
            if !kept.is_empty() {
                let _ = std::io::stderr().write_all(kept.as_bytes());
            }
        }
    }
    let _forward = Forward(gag::BufferRedirect::stderr().ok());
    find()
}

/// The device memory one tape may hold: `NDVM_GPU_MEMORY_MB` when set (a whole number of MiB,
/// at least 1), else 16 GiB on a hardware GPU (a fifth of a datacentre card; set it lower on
/// a smaller one) and 1 GiB on a software one (its memory is the host's).
fn resident_bytes(software: bool) -> u64 {
    let mib = std::env::var("NDVM_GPU_MEMORY_MB")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&m| m >= 1);
    match mib {
        Some(m) => m.saturating_mul(1 << 20),
        None if software => 1 << 30,
        None => 16 << 30,
    }
}
