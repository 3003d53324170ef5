//! Any bytes, read as binary bytecode, as `.nbc` assembly and as dialect source compiled to
//! bytecode, and run by the bytecode client in f32 and f64 over three differing lanes under
//! small limits: a crash, an abort or a timeout here is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ndvm_difftest::untrusted::run_bytecode_bytes(data);
});
