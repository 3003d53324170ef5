//! Which entry of the interpreter runs a tape, and how long one dispatch may run.
//!
//! The interpreter has three entries over the same node code:
//!
//! - [`Kernel::Lane`] (`main` in `interp.wgsl`): one invocation per lane. Every node of a lane
//!   runs in one thread, so a D × D product, inverse or determinant is D³ sequential work per
//!   thread. Right for scalar tapes and small tensors over many lanes: adjacent invocations read
//!   adjacent addresses.
//! - [`Kernel::Cooperative`] (`main_coop` in `coop.wgsl`): one workgroup of 64 invocations per
//!   lane. Wide nodes split their elements over the workgroup with operands staged in
//!   workgroup memory; scalar nodes and guards run on one invocation. Right when the tape's
//!   work is dense linear algebra: the per-thread work drops by up to 64×, and a few thousand
//!   lanes fill a device that keeps hundreds of thousands of threads in flight.
//!
//! - [`Kernel::Batched`] (node-major, `main_batched` in `batched.wgsl`): every wide node of at
//!   least [`BATCH_FROM`] elements whose operands cannot collide (`encode.rs`) is a dispatch of
//!   its own, one invocation per element per lane (looping where a part has more elements than
//!   a grid dimension holds), as a batched library call runs
//!   one operation over a whole batch; the nodes between run in segments of the per-lane entry
//!   and solves (`det`, `logdet`, `inv` above 3 × 3) in the cooperative one. Right when
//!   lanes are many and matrices moderate: every invocation does one element's work, and reads
//!   coalesce across lanes.
//!
//! [`Kernel::Auto`] picks by the tape's shape ([`Kernel::resolve`]); it does not pick the
//! batched entry until a GPU measurement says where it wins (docs/gpu.md). Every entry
//! computes the same values: each element's arithmetic is the same code in the same order.

use crate::GpuError;
use crate::encode::Encoded;

/// The interpreter entry a tape runs with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// [`Kernel::resolve`] decides from the tape.
    #[default]
    Auto,
    /// One invocation per lane.
    Lane,
    /// One workgroup per lane, cooperating on wide nodes.
    Cooperative,
    /// Node-major: every wide node is a dispatch of its own over lanes × elements; the nodes
    /// between run per lane, solves above 3 × 3 cooperatively (see [`Entry`]).
    Batched,
}

/// The entry one dispatch runs: a segment of the tape per lane or cooperatively, or one part
/// of one wide node over lanes × elements (`main_batched` in `batched.wgsl`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Entry {
    Lane,
    Coop,
    Node,
}

impl Entry {
    /// The shader's entry point.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Entry::Lane => "main",
            Entry::Coop => "main_coop",
            Entry::Node => "main_batched",
        }
    }
}

/// Elements of the widest node from which [`Kernel::Auto`] cooperates: a 10 × 10 matrix. Below
/// it the per-lane entry keeps the device as busy and its reads coalesce across lanes. Fitted
/// on an H200 (docs/gpu.md, "Measured"): the Kalman filter at D = 8 runs 2× faster per lane,
/// at D = 16 4× faster cooperating; the ratio grows about as D³, so they cross near D = 10.
pub const COOPERATE_FROM: u32 = 100;

/// Elements from which [`Kernel::Batched`] gives a wide node dispatches of its own (a 4 × 4
/// matrix): each costs a launch, so a 2 × 2 product stays in its lane's segment. Not yet fitted
/// to a measurement (docs/gpu.md).
pub const BATCH_FROM: u32 = 16;

/// Cooperating pays when the wide nodes carry most of the work: the serial remainder runs on
/// one invocation of 64, so it must stay under 1/`SERIAL_SHARE` of the tape's work.
pub const SERIAL_SHARE: u64 = 16;

impl Kernel {
    /// What [`Kernel::Auto`] stands for in this process: `NDVM_GPU_KERNEL` (`auto`, `lane`,
    /// `coop` or `batched`) if set; a value it does not name is ignored, with a warning on
    /// stderr.
    pub fn preferred() -> Kernel {
        let Ok(name) = std::env::var("NDVM_GPU_KERNEL") else {
            return Kernel::Auto;
        };
        Kernel::parse(name.trim()).unwrap_or_else(|| {
            eprintln!("warning: NDVM_GPU_KERNEL={name}: not auto, lane, coop or batched; ignored");
            Kernel::Auto
        })
    }

    /// Parses `auto`, `lane`, `coop` or `batched` (the GPU bench's `NDVM_GPU_KERNELS`).
    pub fn parse(s: &str) -> Option<Kernel> {
        match s {
            "auto" => Some(Kernel::Auto),
            "lane" => Some(Kernel::Lane),
            "coop" | "cooperative" => Some(Kernel::Cooperative),
            "batched" => Some(Kernel::Batched),
            _ => None,
        }
    }

    /// The bench's and the docs' name of the entry.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Auto => "auto",
            Kernel::Lane => "lane",
            Kernel::Cooperative => "coop",
            Kernel::Batched => "batched",
        }
    }

    /// The entry this kernel runs `enc` with on an adapter ([`Kernel::resolve`]), if that
    /// adapter runs it: a node whose loop is longer than the adapter lets one invocation run
    /// ([`Segmenting::loop_limit`]) cannot. The device checks this at upload, and `auto`
    /// before it opens a device.
    pub fn for_tape(
        self,
        enc: &Encoded,
        software: bool,
        limits: Segmenting,
    ) -> Result<Kernel, GpuError> {
        let kernel = self.resolve(enc, software);
        let longest = enc.longest[match kernel {
            Kernel::Cooperative => 1,
            Kernel::Batched => 2,
            _ => 0,
        }];
        match limits.loop_limit.filter(|&l| longest > l) {
            Some(limit) => Err(GpuError::Unsupported(format!(
                "a node runs {longest} loop iterations in one invocation, more than this adapter \
                 runs ({limit}: software Vulkan leaves loops early, silently); it stays on the CPU"
            ))),
            None => Ok(kernel),
        }
    }

    /// The entry for an encoded tape on a hardware (`software` false) or software adapter.
    /// [`Kernel::Auto`] cooperates on a hardware GPU when the widest node has at least
    /// [`COOPERATE_FROM`] elements and the serial part is at most 1/[`SERIAL_SHARE`] of the
    /// work. A software adapter (a CPU) runs a workgroup's invocations one after another, so
    /// barriers only cost there: it keeps one invocation per lane.
    pub fn resolve(self, enc: &Encoded, software: bool) -> Kernel {
        match self {
            Kernel::Auto
                if !software
                    && enc.widest >= COOPERATE_FROM
                    && enc.serial_work * SERIAL_SHARE <= enc.work =>
            {
                Kernel::Cooperative
            }
            Kernel::Auto => Kernel::Lane,
            k => k,
        }
    }
}

/// How much of a tape one dispatch runs: drivers stop a shader that runs long (a watchdog), so
/// a long tape is split into segments run one after another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segmenting {
    /// Nodes per dispatch at most.
    pub nodes: usize,
    /// Work per dispatch (multiply-adds per lane, roughly) at most; a node over it gets its
    /// own dispatch.
    pub work: u64,
    /// Loop iterations the driver lets one invocation run in one dispatch, if it limits them:
    /// a tape with a node over it cannot run there (it stays on the CPU).
    pub loop_limit: Option<u64>,
}

impl Segmenting {
    /// Mesa's software Vulkan (lavapipe) counts the loop iterations of an invocation and leaves
    /// every loop once 65,535 have run, silently (gallivm's loop limiter): short segments, and
    /// no node longer than 58,000 iterations (`gpu/tests/programs.rs` finds the edge: a 40 × 40
    /// matmul's 65,640 iterations lose its last outputs).
    pub const SOFTWARE: Segmenting = Segmenting {
        nodes: 256,
        work: 4096,
        loop_limit: Some(58_000),
    };

    /// A hardware GPU: fewer, longer dispatches (each costs a few µs to launch); a dispatch of
    /// this much work runs for milliseconds, far below the seconds a display watchdog allows.
    /// On an H200 the D = 32 Kalman filter's 82 dispatches a run were well under 1% of its
    /// 414 ms (docs/gpu.md, "Measured"), so the size is not refitted.
    pub const HARDWARE: Segmenting = Segmenting {
        nodes: 4096,
        work: 1 << 20,
        loop_limit: None,
    };

    /// The segmenting of a software (`true`) or hardware adapter.
    pub fn of(software: bool) -> Segmenting {
        if software {
            Segmenting::SOFTWARE
        } else {
            Segmenting::HARDWARE
        }
    }
}
