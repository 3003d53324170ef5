//! A fit cut into parts by candidate and merged back (`ndvm.ray.fit`): the merged results are
//! the whole fit's, byte for byte, whatever the part count, and a part reported twice counts once.

use ndvm_components::scene::Scene;
use ndvm_systems::prelude::*;
use ndvm_systems::report::parts;
use std::path::PathBuf;

fn scenes() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenes")
}

fn scene() -> Scene {
    let text = std::fs::read_to_string(scenes().join("feynman.scene.ron")).expect("scene");
    Scene::from_ron(&text).expect("scene parses")
}

/// The results JSON (no timing) of the candidates whose index is `k` modulo `n`.
fn part(scene: &Scene, k: usize, n: usize) -> String {
    let options = FitOptions {
        threads: Some(2),
        ..FitOptions::default()
    };
    parts::fit(scene, &scenes(), Some((k, n)), &options).expect("the part fits")
}

#[test]
fn parts_merge_back_byte_for_byte() {
    let scene = scene();
    let whole = part(&scene, 0, 1);
    for n in [2, 3, 7] {
        let parts: Vec<String> = (0..n).map(|k| part(&scene, k, n)).collect();
        assert_eq!(parts::merge(&parts).expect("merges"), whole, "{n} parts");
    }
    let mut twice: Vec<String> = (0..2).map(|k| part(&scene, k, 2)).collect();
    twice.push(twice[0].clone());
    assert_eq!(parts::merge(&twice).expect("merges"), whole);
}

#[test]
fn a_part_that_is_not_a_fits_results_is_named() {
    let whole = part(&scene(), 0, 1);
    let err = parts::merge(&[whole, "{\"candidates\": 3}".into()]).expect_err("refused");
    assert!(err.starts_with("part 1 is not a fit's results"), "{err}");
}
