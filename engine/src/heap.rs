//! Heap arenas for the structural values of one walk: pairs, closures and environment frames.
//!
//! Pairs and closures are write-once and live until the walk ends; every arena is cleared (its
//! capacity kept) between walks. Frames are flat — one per closure invocation, holding its
//! parameters and local variables — and are bump-allocated. A frame that no closure captured is
//! popped when its invocation returns or makes a tail call, so tail loops run in constant space.

use crate::value::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Closure {
    pub lambda: u32,
    pub env: u32,
}

#[derive(Clone, Copy, Debug)]
pub struct Frame {
    pub base: u32,
    pub parent: u32,
    /// Set when a closure over this frame (or a frame below it) exists: it must outlive its call.
    pub captured: bool,
}

/// The frame every program starts in (top-level definitions and top-level `let` variables).
pub const TOP_FRAME: u32 = 0;

#[derive(Debug, Default)]
pub struct Heap {
    pub pairs: Vec<[Value; 2]>,
    pub closures: Vec<Closure>,
    pub frames: Vec<Frame>,
    pub slots: Vec<Value>,
    /// The most frames alive at once during the walk.
    pub peak_frames: usize,
}

impl Heap {
    pub fn reset(&mut self) {
        self.pairs.clear();
        self.closures.clear();
        self.frames.clear();
        self.slots.clear();
        self.peak_frames = 0;
    }

    /// Heap cells in use: pairs, closures and live frames.
    pub fn cells(&self) -> u64 {
        (self.pairs.len() + self.closures.len() + self.frames.len()) as u64
    }

    pub fn cons(&mut self, car: Value, cdr: Value) -> Value {
        self.pairs.push([car, cdr]);
        Value {
            tag: crate::value::tag::PAIR,
            aux: 0,
            slot: (self.pairs.len() - 1) as u32,
        }
    }

    pub fn pair(&self, v: Value) -> Option<[Value; 2]> {
        (v.tag == crate::value::tag::PAIR).then(|| self.pairs[v.slot as usize])
    }

    /// A new frame of `size` slots whose first slots are `args` (the rest unbound).
    pub fn push_frame(&mut self, parent: u32, size: u32, args: &[Value]) -> u32 {
        let base = self.slots.len() as u32;
        self.slots.extend_from_slice(args);
        self.slots
            .resize(base as usize + size as usize, Value::UNBOUND);
        self.frames.push(Frame {
            base,
            parent,
            captured: false,
        });
        self.peak_frames = self.peak_frames.max(self.frames.len());
        (self.frames.len() - 1) as u32
    }

    /// Pops uncaptured frames from the top, never below `floor` frames.
    pub fn pop_frames(&mut self, floor: u32) {
        while self.frames.len() > floor as usize {
            match self.frames.last() {
                Some(f) if !f.captured => {
                    self.slots.truncate(f.base as usize);
                    self.frames.pop();
                }
                _ => break,
            }
        }
    }

    /// Marks `frame` and its ancestors as captured by a closure.
    pub fn capture(&mut self, mut frame: u32) {
        loop {
            let f = &mut self.frames[frame as usize];
            if f.captured {
                return;
            }
            f.captured = true;
            if frame == TOP_FRAME {
                return;
            }
            frame = f.parent;
        }
    }

    /// The frame `depth` levels up from `env`.
    #[inline]
    pub fn up(&self, mut env: u32, depth: u32) -> u32 {
        for _ in 0..depth {
            env = self.frames[env as usize].parent;
        }
        env
    }

    #[inline]
    pub fn slot(&self, frame: u32, slot: u32) -> Value {
        self.slots[(self.frames[frame as usize].base + slot) as usize]
    }

    #[inline]
    pub fn set_slot(&mut self, frame: u32, slot: u32, v: Value) {
        let i = (self.frames[frame as usize].base + slot) as usize;
        self.slots[i] = v;
    }
}
