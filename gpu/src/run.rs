//! Running an uploaded tape: buffers per chunk of lanes, uploads, one dispatch, downloads.
//!
//! The payload lives on the device slot-major like the CPU's (slot `s` of lane `l` at
//! `s · width + l`), one primal and one adjoint buffer per **chunk** of lanes: a batch wider
//! than the device's largest storage binding allows is split into chunks that each fit, run
//! one after another. A broadcast tape (one walked lane) over more lanes than the device may
//! hold at once ([`Gpu::resident_bytes`]) runs its chunks through **one** set of buffers, a
//! slice at a time: its leaf rows are the same in every lane, so only the inputs' rows change
//! between slices (the last slice ends at the last lane and may overlap the one before; a
//! lane's values do not depend on its slice). The first run copies every leaf row (inputs,
//! data, constant tensor elements) to the device; later runs copy only the inputs' rows —
//! between calibration steps nothing else changes. Each run reads back only the result's rows,
//! the number inputs' gradient rows and the guard flags.

use crate::encode::{Encoded, Segment, part_elements};
use crate::{Entry, Gpu, GpuError, Kernel};
use ndvm_engine::export::Recording;
use ndvm_engine::tape::GuardKind;
use std::time::{Duration, Instant};
use wgpu::util::DeviceExt;

/// Invocations per workgroup (the shader's `@workgroup_size`).
const WORKGROUP: usize = 64;

/// The uniform block (`Params` in `interp.wgsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    lanes: u32,
    offset: u32,
    total: u32,
    nodes: u32,
    guards: u32,
    guard_base: u32,
    const_base: u32,
    set_words: u32,
    outcome_base: u32,
    seed_start: u32,
    seed_end: u32,
    phase: u32,
    nan_bits: u32,
    inf_bits: u32,
    sq: u32,
    first: u32,
    last: u32,
    guard_from: u32,
    /// Workgroups per row of the cooperative entry's grid (lane = y · grid + x), or the rows
    /// of a node-major dispatch (its elements' stride).
    grid: u32,
    /// The node-major entry's part of its node: 0 forward, 1 backward into `a`, 2 into `b`.
    part: u32,
    pad: u32,
}

/// Wall time of the last run's three parts.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Timings {
    /// Writing input (and on the first run, leaf) rows to the device.
    pub upload: Duration,
    /// The interpreter's dispatches, to completion.
    pub kernel: Duration,
    /// Copying the result, gradient and flag rows back and reading them.
    pub download: Duration,
}

/// What a run found.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceRun {
    /// The result, element-major: element `e` of lane `l` at `e · lanes + l` (a number has one
    /// element).
    pub result: Vec<f32>,
    /// Per program input: `∂result/∂input` in every lane (number inputs; empty otherwise, and
    /// when gradients were not asked for).
    pub grads: Vec<Vec<f32>>,
    /// Lanes where a guard failed, ascending: their values are not a walk's (walk them again).
    pub failed: Vec<u32>,
    /// Guards that failed in at least one lane, by kind.
    pub failures: Vec<(GuardKind, u32)>,
}

/// The payload buffers one chunk (or every slice of a broadcast tape) runs in.
#[derive(Debug)]
struct Buffers {
    width: usize,
    x: wgpu::Buffer,
    g: wgpu::Buffer,
    /// Kept with the bind groups that name it.
    _scratch: wgpu::Buffer,
    flags: wgpu::Buffer,
    /// Whether the leaf rows are in `x`.
    leaves: bool,
}

/// One chunk of lanes: where it starts, its buffers and its dispatches.
#[derive(Debug)]
struct Chunk {
    offset: usize,
    width: usize,
    /// Its buffers ([`DeviceTape::buffers`]).
    buf: usize,
    readback: wgpu::Buffer,
    /// The forward dispatches in order, then the backward ones (segments in reverse order).
    forward: Vec<Dispatch>,
    backward: Vec<Dispatch>,
    /// Every dispatch's bindings, its parameters at the dispatch's offset.
    bind: wgpu::BindGroup,
}

/// One dispatch: its entry, where its parameters sit in the chunk's parameter buffer, and its
/// grid of workgroups.
#[derive(Debug)]
struct Dispatch {
    entry: Entry,
    offset: u32,
    grid: (u32, u32),
}

/// A recording uploaded to the device, ready to run for new inputs.
#[derive(Debug)]
pub struct DeviceTape {
    enc: Encoded,
    lanes: usize,
    slots: usize,
    buffers: Vec<Buffers>,
    chunks: Vec<Chunk>,
    /// The interpreter entry it runs with (never [`Kernel::Auto`]).
    kernel: Kernel,
    /// The pipeline of each entry its dispatches run.
    pipelines: Vec<(Entry, wgpu::ComputePipeline)>,
    /// The last run's timings.
    pub timings: Timings,
}

impl Gpu {
    /// Uploads a recording: its instructions once, and buffers for its lanes.
    pub fn upload(&self, rec: &Recording<'_, f32>) -> Result<DeviceTape, GpuError> {
        self.upload_chunked(rec, rec.lanes, usize::MAX)
    }

    /// Uploads a **one-lane** recording to run over `lanes` lanes ([`DeviceTape::run_lanes`]):
    /// the walk of one lane stands for every lane whose guards hold (lanes never mix), so a
    /// population is walked once and replayed on the device; the lanes it flags are walked on
    /// the CPU.
    pub fn upload_broadcast(
        &self,
        rec: &Recording<'_, f32>,
        lanes: usize,
    ) -> Result<DeviceTape, GpuError> {
        if rec.lanes != 1 {
            return Err(GpuError::Unsupported(format!(
                "a broadcast tape is recorded over one lane, not {}",
                rec.lanes
            )));
        }
        self.upload_chunked(rec, lanes, usize::MAX)
    }

    /// [`Gpu::upload`] over `lanes` lanes (the recording's, or any from a one-lane recording)
    /// with at most `max_width` lanes per chunk (tests split small batches).
    pub fn upload_chunked(
        &self,
        rec: &Recording<'_, f32>,
        lanes: usize,
        max_width: usize,
    ) -> Result<DeviceTape, GpuError> {
        self.upload_with(rec, lanes, max_width, Kernel::Auto)
    }

    /// [`Gpu::upload_chunked`] with the interpreter entry chosen by the caller ([`Kernel`]).
    pub fn upload_with(
        &self,
        rec: &Recording<'_, f32>,
        lanes: usize,
        max_width: usize,
        kernel: Kernel,
    ) -> Result<DeviceTape, GpuError> {
        if let Some(e) = self.failure() {
            return Err(GpuError::Lost(e));
        }
        let enc = Encoded::new(rec, self.segmenting)?;
        let kernel = match kernel {
            Kernel::Auto => self.prefer,
            k => k,
        };
        let kernel = kernel.for_tape(&enc, self.is_software(), self.segmenting)?;
        let segments: Vec<Segment> = match kernel {
            Kernel::Batched => enc.batched.clone(),
            _ => {
                let entry = if kernel == Kernel::Cooperative {
                    Entry::Coop
                } else {
                    Entry::Lane
                };
                let seg = |&(from, to): &(u32, u32)| Segment { from, to, entry };
                enc.segments.iter().map(seg).collect()
            }
        };
        // The pipeline of every entry the segments run (each compiled when first needed).
        let mut entries: Vec<Entry> = segments.iter().map(|s| s.entry).collect();
        entries.sort_by_key(|&e| e as usize);
        entries.dedup();
        let pipelines = entries
            .into_iter()
            .map(|e| Ok((e, self.pipeline(e)?)))
            .collect::<Result<Vec<_>, GpuError>>()?;
        let slots = rec.slots.max(1);
        let limit = self.max_binding_bytes() as usize;
        let per_lane = 4 * slots.max(4 * enc.sq as usize).max(1);
        let dim = self.limits.max_compute_workgroups_per_dimension as usize;
        let grid = match kernel {
            Kernel::Cooperative => dim * dim,
            _ => dim * WORKGROUP,
        };
        let fit = (limit / per_lane).min(grid);
        let mut width = if lanes <= fit.min(max_width) {
            lanes
        } else {
            fit.min(max_width) / WORKGROUP * WORKGROUP
        };
        if width == 0 {
            return Err(GpuError::Unsupported(format!(
                "one lane's payload ({slots} slots) is larger than the device's largest buffer \
                 ({limit} bytes)"
            )));
        }
        // A broadcast tape over more lanes than the device may hold runs them in slices
        // through one set of buffers.
        let lane_bytes = 4 * (2 * slots + 4 * enc.sq as usize + 1) as u64;
        let resident = usize::try_from(self.resident / lane_bytes).unwrap_or(usize::MAX);
        let sliced = rec.lanes == 1 && lanes > 1 && lanes > resident;
        if sliced {
            if resident == 0 {
                return Err(GpuError::Unsupported(format!(
                    "one lane's payload ({lane_bytes} bytes) is more than a tape may hold on \
                     this device ({} bytes; NDVM_GPU_MEMORY_MB raises it)",
                    self.resident
                )));
            }
            let whole = resident / WORKGROUP * WORKGROUP;
            width = width.min(if whole > 0 { whole } else { resident });
        }
        let reads = self.readback_rows(rec);
        if enc.prog.len() * 4 > limit || enc.bits.len() * 4 > limit {
            return Err(GpuError::Unsupported(format!(
                "the program ({} words) or its lane sets ({} words) exceed the device's largest \
                 buffer ({limit} bytes)",
                enc.prog.len(),
                enc.bits.len()
            )));
        }
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let storage = |label: &str, words: &[u32]| {
            self.device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some(label),
                    contents: bytemuck::cast_slice(words),
                    usage: wgpu::BufferUsages::STORAGE,
                })
        };
        let prog = storage("ndvm program", &enc.prog);
        let bits = storage("ndvm lane sets", &enc.bits);
        let mut chunks = Vec::new();
        let mut buffers = Vec::new();
        let mut offset = 0;
        while offset < lanes {
            let w = width.min(lanes - offset);
            // A slice runs in the one set of buffers, at their width: the last one ends at
            // the last lane.
            let (at, w) = if sliced {
                (offset.min(lanes - width), width)
            } else {
                (offset, w)
            };
            if buffers.is_empty() || !sliced {
                buffers.push(self.buffers(&enc, rec, w));
            }
            let buf = buffers.len() - 1;
            let c = self.chunk(
                (&enc, &segments),
                rec,
                (at, w, lanes),
                (&prog, &bits),
                reads,
                &buffers[buf],
            );
            chunks.push(Chunk { buf, ..c });
            offset = at + w;
        }
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(GpuError::Lost(format!("out of device memory: {e}")));
        }
        Ok(DeviceTape {
            enc,
            lanes,
            slots,
            buffers,
            chunks,
            kernel,
            pipelines,
            timings: Timings::default(),
        })
    }

    /// The cooperative entry's grid for `width` lanes, one workgroup each: `(x, y)` with lane
    /// `y · x + x'` (a dimension holds at most the device's workgroups per dimension).
    fn coop_grid(&self, width: usize) -> (usize, usize) {
        let row = width.clamp(1, self.limits.max_compute_workgroups_per_dimension as usize);
        (row, width.div_ceil(row))
    }

    /// Rows a run reads back: the result's, then one per program input.
    fn readback_rows(&self, rec: &Recording<'_, f32>) -> usize {
        rec.result.len() + rec.inputs.len()
    }

    /// Payload buffers for `width` lanes.
    fn buffers(&self, enc: &Encoded, rec: &Recording<'_, f32>, width: usize) -> Buffers {
        let buffer = |label: &str, bytes: usize| {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes.max(4) as u64,
                usage: wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::COPY_DST
                    | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            })
        };
        let rows = rec.slots.max(1) * width * 4;
        Buffers {
            width,
            x: buffer("ndvm primal", rows),
            g: buffer("ndvm adjoint", rows),
            _scratch: buffer("ndvm scratch", 4 * enc.sq as usize * width * 4),
            flags: buffer("ndvm flags", (width + enc.guards as usize) * 4),
            leaves: false,
        }
    }

    /// A chunk of `width` lanes from `offset` (of `lanes`) running in `b`.
    fn chunk(
        &self,
        (enc, segments): (&Encoded, &[Segment]),
        rec: &Recording<'_, f32>,
        (offset, width, lanes): (usize, usize, usize),
        (prog, bits): (&wgpu::Buffer, &wgpu::Buffer),
        reads: usize,
        b: &Buffers,
    ) -> Chunk {
        let base = Params {
            lanes: width as u32,
            offset: offset as u32,
            total: lanes as u32,
            nodes: enc.nodes,
            guards: enc.guards,
            guard_base: enc.guard_base,
            const_base: enc.const_base,
            set_words: enc.set_words,
            outcome_base: enc.outcome_base,
            seed_start: rec.result.start,
            seed_end: rec.result.end,
            phase: 0,
            nan_bits: f32::NAN.to_bits(),
            inf_bits: f32::INFINITY.to_bits(),
            sq: enc.sq,
            first: 0,
            last: 0,
            guard_from: 0,
            grid: self.coop_grid(width).0 as u32,
            part: 0,
            pad: 0,
        };
        let d = &self.device;
        let readback = d.create_buffer(&wgpu::BufferDescriptor {
            label: Some("ndvm readback"),
            size: ((reads * width + width + enc.guards as usize) * 4).max(4) as u64,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let rows = width.div_ceil(WORKGROUP) as u32;
        let dim = self.limits.max_compute_workgroups_per_dimension;
        // Each dispatch's parameters, at a multiple of the device's uniform offset alignment.
        let stride = std::mem::size_of::<Params>()
            .next_multiple_of(self.limits.min_uniform_buffer_offset_alignment as usize);
        let mut params: Vec<u8> = Vec::new();
        // One dispatch of `segment`'s `part` (0 the forward; a per-lane or cooperative
        // segment's backward is part 1), or none where a node-major part has no elements.
        let mut dispatch = |s: Segment, part: u32| -> Option<Dispatch> {
            let (grid, rows_of) = match s.entry {
                Entry::Lane => ((rows, 1), base.grid),
                Entry::Coop => {
                    let (x, y) = self.coop_grid(width);
                    ((x as u32, y as u32), base.grid)
                }
                Entry::Node => {
                    let n = &rec.tape.nodes[s.from as usize];
                    let (aux, m, k) = crate::encode::dims(rec.tape, n);
                    let count = part_elements(n.op, aux, m, k)[part as usize];
                    if count == 0 {
                        return None;
                    }
                    let y = count.min(dim);
                    ((rows, y), y)
                }
            };
            let p = Params {
                phase: u32::from(part > 0),
                part,
                first: s.from,
                last: s.to,
                guard_from: rec.tape.guards.partition_point(|g| g.pos < s.from) as u32,
                grid: rows_of,
                ..base
            };
            let offset = params.len() as u32;
            params.extend_from_slice(bytemuck::bytes_of(&p));
            params.resize(params.len().next_multiple_of(stride), 0);
            Some(Dispatch {
                entry: s.entry,
                offset,
                grid,
            })
        };
        let forward = segments.iter().filter_map(|&s| dispatch(s, 0)).collect();
        // Backward: the segments in reverse; a node-major node's part into `a`, then into `b`.
        let mut backward = Vec::new();
        for &s in segments.iter().rev() {
            backward.extend(dispatch(s, 1));
            if s.entry == Entry::Node {
                backward.extend(dispatch(s, 2));
            }
        }
        let params = d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("ndvm dispatch parameters"),
            contents: &params,
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let uniform = wgpu::BindGroupEntry {
            binding: 0,
            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: &params,
                offset: 0,
                size: wgpu::BufferSize::new(std::mem::size_of::<Params>() as u64),
            }),
        };
        let bind = d.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("ndvm chunk"),
            layout: &self.layout,
            entries: &[
                uniform,
                entry(1, prog),
                entry(2, bits),
                entry(3, &b.x),
                entry(4, &b.g),
                entry(5, &b._scratch),
                entry(6, &b.flags),
            ],
        });
        Chunk {
            offset,
            width,
            buf: 0,
            readback,
            forward,
            backward,
            bind,
        }
    }
}

impl DeviceTape {
    /// The interpreter entry this tape runs with.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// The lanes per chunk (the first chunk's width) and the number of chunks.
    pub fn chunking(&self) -> (usize, usize) {
        (
            self.chunks.first().map_or(0, |c| c.width),
            self.chunks.len(),
        )
    }

    /// Whether the chunks run one after another through one set of buffers (a broadcast tape
    /// over more lanes than the device may hold at once).
    pub fn sliced(&self) -> bool {
        self.buffers.len() < self.chunks.len()
    }

    /// Device bytes held for the payload (primal and adjoint) over all buffers.
    pub fn payload_bytes(&self) -> u64 {
        self.buffers
            .iter()
            .map(|b| (2 * self.slots * b.width * 4) as u64)
            .sum()
    }

    /// Runs the tape for the recording's current input values (after [`ndvm_engine::Vm::rebind`]
    /// wrote them): forward and guards, and the backward pass when `grad`.
    pub fn run(
        &mut self,
        gpu: &Gpu,
        rec: &Recording<'_, f32>,
        grad: bool,
    ) -> Result<DeviceRun, GpuError> {
        if rec.lanes != self.lanes {
            return Err(GpuError::Unsupported(
                "the recording's lane count is not the tape's (a broadcast tape runs with \
                 `run_lanes`)"
                    .into(),
            ));
        }
        self.execute(gpu, rec, None, grad)
    }

    /// Runs a broadcast tape ([`Gpu::upload_broadcast`]): `inputs[i]` holds program input
    /// `i`'s value in every lane (a number input; `None` keeps the recorded value in every
    /// lane, as for data and matrices).
    pub fn run_lanes(
        &mut self,
        gpu: &Gpu,
        rec: &Recording<'_, f32>,
        inputs: &[Option<&[f32]>],
        grad: bool,
    ) -> Result<DeviceRun, GpuError> {
        if inputs.len() != rec.inputs.len()
            || inputs.iter().flatten().any(|x| x.len() != self.lanes)
        {
            return Err(GpuError::Unsupported(format!(
                "run_lanes wants one value per lane ({}) for each of the {} inputs",
                self.lanes,
                rec.inputs.len()
            )));
        }
        self.execute(gpu, rec, Some(inputs), grad)
    }

    fn execute(
        &mut self,
        gpu: &Gpu,
        rec: &Recording<'_, f32>,
        inputs: Option<&[Option<&[f32]>]>,
        grad: bool,
    ) -> Result<DeviceRun, GpuError> {
        if rec.slots.max(1) != self.slots {
            return Err(GpuError::Unsupported(
                "the recording changed since it was uploaded".into(),
            ));
        }
        if let Some(e) = gpu.failure() {
            return Err(GpuError::Lost(e));
        }
        let start = Instant::now();
        let mut upload = std::time::Duration::ZERO;
        let scope = gpu.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let oom = gpu.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let rows = self.rows(rec);
        // Chunk by chunk: its rows go up, its dispatches run and its rows are copied out before
        // the next chunk (which may share its buffers) writes them.
        for k in 0..self.chunks.len() {
            let t = Instant::now();
            self.upload_rows(gpu, rec, inputs, k);
            upload += t.elapsed();
            let c = &self.chunks[k];
            let b = &self.buffers[c.buf];
            let mut encoder = gpu.device.create_command_encoder(&Default::default());
            if grad {
                encoder.clear_buffer(&b.g, 0, None);
            }
            encoder.clear_buffer(&b.flags, 0, None);
            {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                let backward = if grad { &c.backward[..] } else { &[] };
                let mut current = None;
                for d in c.forward.iter().chain(backward) {
                    if current != Some(d.entry) {
                        // Every entry a dispatch names was compiled at the upload.
                        let p = self.pipelines.iter().find(|(e, _)| *e == d.entry);
                        if let Some((_, p)) = p {
                            pass.set_pipeline(p);
                        }
                        current = Some(d.entry);
                    }
                    pass.set_bind_group(0, &c.bind, &[d.offset]);
                    pass.dispatch_workgroups(d.grid.0, d.grid.1, 1);
                }
            }
            let w = (c.width * 4) as u64;
            for (i, &(grad_row, slot)) in rows.iter().enumerate() {
                let src = if grad_row { &b.g } else { &b.x };
                encoder.copy_buffer_to_buffer(src, slot as u64 * w, &c.readback, i as u64 * w, w);
            }
            let flags = ((c.width + self.enc.guards as usize) * 4) as u64;
            encoder.copy_buffer_to_buffer(&b.flags, 0, &c.readback, rows.len() as u64 * w, flags);
            gpu.queue.submit([encoder.finish()]);
        }
        wait(gpu)?;
        let kernel = start.elapsed() - upload;
        for c in &self.chunks {
            c.readback.slice(..).map_async(wgpu::MapMode::Read, |_| {});
        }
        wait(gpu)?;
        if let Some(e) = pollster::block_on(oom.pop()) {
            return Err(GpuError::Lost(format!("out of device memory: {e}")));
        }
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(GpuError::Lost(e.to_string()));
        }
        if let Some(e) = gpu.failure() {
            return Err(GpuError::Lost(e));
        }
        let run = self.read(rec, &rows, grad);
        for c in &self.chunks {
            c.readback.unmap();
        }
        self.timings = Timings {
            upload,
            kernel,
            download: start.elapsed() - upload - kernel,
        };
        run
    }

    /// The device's primal payload after the last run, slot-major over all lanes like
    /// [`Recording::primal`] (for diagnosing a disagreement: the first slot that differs from
    /// the CPU's names the node).
    pub fn primal(&self, gpu: &Gpu) -> Result<Vec<f32>, GpuError> {
        if self.sliced() {
            return Err(GpuError::Unsupported(
                "a sliced tape keeps only its last slice's payload".into(),
            ));
        }
        let b = self.lanes;
        let mut out = vec![0.0f32; self.slots * b];
        for c in &self.chunks {
            let bytes = (self.slots * c.width * 4) as u64;
            let stage = gpu.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("ndvm primal readback"),
                size: bytes,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let mut encoder = gpu.device.create_command_encoder(&Default::default());
            encoder.copy_buffer_to_buffer(&self.buffers[c.buf].x, 0, &stage, 0, bytes);
            gpu.queue.submit([encoder.finish()]);
            stage.slice(..).map_async(wgpu::MapMode::Read, |_| {});
            wait(gpu)?;
            let view = stage
                .slice(..)
                .get_mapped_range()
                .map_err(|e| GpuError::Lost(e.to_string()))?;
            let xs: &[f32] = bytemuck::cast_slice(&view);
            for s in 0..self.slots {
                out[s * b + c.offset..s * b + c.offset + c.width]
                    .copy_from_slice(&xs[s * c.width..(s + 1) * c.width]);
            }
        }
        Ok(out)
    }

    /// Copies leaf rows (the first run in its buffers) or input rows (later runs) to chunk
    /// `k`: from the recording, broadcast from its one lane, or from `inputs`.
    fn upload_rows(
        &mut self,
        gpu: &Gpu,
        rec: &Recording<'_, f32>,
        inputs: Option<&[Option<&[f32]>]>,
        k: usize,
    ) {
        let (offset, width, buf) = {
            let c = &self.chunks[k];
            (c.offset, c.width, c.buf)
        };
        let b = &mut self.buffers[buf];
        let mut rows: Vec<(u32, u32)> = if b.leaves {
            Vec::new()
        } else {
            rec.leaves.to_vec()
        };
        b.leaves = true;
        // Per slot: the lane values given for it (broadcast runs).
        let mut given: Vec<(u32, &[f32])> = Vec::new();
        for (i, slots) in rec.inputs.iter().enumerate() {
            let Some(slots) = slots else { continue };
            match inputs.and_then(|xs| xs[i]) {
                Some(xs) if slots.number => given.push((slots.slot, xs)),
                _ if inputs.is_none() => rows.push((slots.slot, slots.len)),
                _ => {}
            }
        }
        let lanes = rec.lanes;
        let write = |row: usize, data: &[f32]| {
            let at = (row * width * 4) as u64;
            gpu.queue.write_buffer(&b.x, at, bytemuck::cast_slice(data));
        };
        for &(slot, n) in &rows {
            let (s, e) = (slot as usize, (slot + n) as usize);
            if lanes == 1 && self.lanes > 1 {
                for row in s..e {
                    write(row, &vec![rec.primal[row]; width]);
                }
            } else if width == lanes {
                // One chunk: the rows are contiguous on both sides.
                write(s, &rec.primal[s * lanes..e * lanes]);
            } else {
                for row in s..e {
                    write(row, &rec.primal[row * lanes + offset..][..width]);
                }
            }
        }
        for &(slot, xs) in &given {
            write(slot as usize, &xs[offset..offset + width]);
        }
    }

    /// The rows read back: `(from the adjoint buffer, slot)` for the result's elements, then
    /// each number input's gradient row.
    fn rows(&self, rec: &Recording<'_, f32>) -> Vec<(bool, u32)> {
        let mut rows: Vec<(bool, u32)> = rec.result.clone().map(|s| (false, s)).collect();
        for i in rec.inputs.iter().flatten().filter(|i| i.number) {
            rows.push((true, i.slot));
        }
        rows
    }

    fn read(
        &self,
        rec: &Recording<'_, f32>,
        rows: &[(bool, u32)],
        grad: bool,
    ) -> Result<DeviceRun, GpuError> {
        let b = self.lanes;
        let r = rec.result.len();
        let mut result = vec![0.0f32; r * b];
        let mut grads: Vec<Vec<f32>> = rec
            .inputs
            .iter()
            .map(|i| match i {
                Some(i) if i.number && grad => vec![0.0; b],
                _ => Vec::new(),
            })
            .collect();
        let number_inputs: Vec<usize> = (0..rec.inputs.len())
            .filter(|&i| rec.inputs[i].is_some_and(|s| s.number))
            .collect();
        let mut failed = Vec::new();
        let mut guard_failed = vec![false; self.enc.guards as usize];
        // A slice may overlap the one before it: those lanes are flagged once.
        let mut covered = 0;
        for c in &self.chunks {
            let view = c
                .readback
                .slice(..)
                .get_mapped_range()
                .map_err(|e| GpuError::Lost(e.to_string()))?;
            let words: &[f32] = bytemuck::cast_slice(&view);
            let row = |i: usize| &words[i * c.width..(i + 1) * c.width];
            for e in 0..r {
                result[e * b + c.offset..e * b + c.offset + c.width].copy_from_slice(row(e));
            }
            if grad {
                for (k, &i) in number_inputs.iter().enumerate() {
                    grads[i][c.offset..c.offset + c.width].copy_from_slice(row(r + k));
                }
            }
            let flags: &[u32] = bytemuck::cast_slice(&words[rows.len() * c.width..]);
            for (l, &f) in flags[..c.width].iter().enumerate() {
                if f != 0 && c.offset + l >= covered {
                    failed.push((c.offset + l) as u32);
                }
            }
            covered = c.offset + c.width;
            for (g, &f) in flags[c.width..].iter().enumerate().take(guard_failed.len()) {
                guard_failed[g] |= f != 0;
            }
        }
        let mut failures: Vec<(GuardKind, u32)> = Vec::new();
        for (g, _) in rec
            .tape
            .guards
            .iter()
            .zip(&guard_failed)
            .filter(|(_, f)| **f)
        {
            let kind = g.check.kind();
            match failures.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, n)) => *n += 1,
                None => failures.push((kind, 1)),
            }
        }
        failures.sort();
        Ok(DeviceRun {
            result,
            grads,
            failed,
            failures,
        })
    }
}

fn entry(binding: u32, b: &wgpu::Buffer) -> wgpu::BindGroupEntry<'_> {
    wgpu::BindGroupEntry {
        binding,
        resource: b.as_entire_binding(),
    }
}

/// Waits for the queue; a lost device is an error.
fn wait(gpu: &Gpu) -> Result<(), GpuError> {
    gpu.device
        .poll(wgpu::PollType::Wait {
            submission_index: None,
            timeout: None,
        })
        .map(|_| ())
        .map_err(|e| GpuError::Lost(e.to_string()))
}
