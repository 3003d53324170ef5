//! Every conformance program's tape on the device: forward and gradient against a fresh CPU
//! walk (f32), at B = 1 and B = 256, at the recorded inputs and moved ones.

#[path = "../../engine/tests/common/mod.rs"]
mod common;
mod support;

use common::*;
use ndvm_engine::prelude::*;
use support::*;

#[test]
fn conformance_programs_on_the_gpu() {
    let Some(gpu) = gpu() else { return };
    let (mut runs, mut values) = (0, 0);
    for p in conformance_programs() {
        if !p["error"].is_null() {
            continue;
        }
        let name = p["name"].as_str().unwrap_or("?");
        let src = p["src"].as_str().expect("src");
        for lanes in [1, 256] {
            let first = conformance_bindings(&p, lanes, 0.0);
            let program = Program::new(src, &first.names()).expect("decodes");
            for shift in [0.0, 1e-3, -2e-2] {
                let next = conformance_bindings(&p, lanes, shift);
                let what = format!("{name} B={lanes} shift={shift}");
                if let Some(seen) =
                    gpu_matches_cpu(&gpu, &what, &program, (&first, &next), usize::MAX)
                {
                    runs += 1;
                    values += seen.values;
                }
            }
        }
    }
    assert!(runs >= 150, "only {runs} runs compared");
    eprintln!("{runs} runs, {values} values agree");
}
