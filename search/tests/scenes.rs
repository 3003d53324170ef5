//! Every scene shipped in `scenes/` starts as `ndvm fit` or `ndvm search` would start it.

use ndvm_components::scene::Scene;
use ndvm_search::{Search, SearchOptions};
use ndvm_systems::prelude::*;
use std::path::{Path, PathBuf};

fn scenes() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenes")
}

fn load(name: &str) -> Scene {
    let path = scenes().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Scene::from_ron(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn every_shipped_scene_parses() {
    let mut n = 0;
    for entry in std::fs::read_dir(scenes()).expect("scenes/") {
        let path = entry.expect("entry").path();
        if path.to_string_lossy().ends_with(".scene.ron") {
            let name = path.file_name().and_then(|s| s.to_str()).expect("name");
            let scene = load(name);
            if scene.search.is_some() {
                let options = SearchOptions::default();
                Search::new(&scene, Path::new(&scenes()), &options)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
            } else {
                Fit::new(&scene, Path::new(&scenes()), &FitOptions::default())
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
            }
            n += 1;
        }
    }
    assert!(n >= 9, "{n} scenes");
}
