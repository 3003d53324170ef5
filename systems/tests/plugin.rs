//! The plugin example: a custom primitive registered by a plugin fits a scene that needs it.

#[path = "../examples/hill_plugin.rs"]
mod example;

use ndvm_components::scene::Scene;
use ndvm_systems::prelude::*;
use std::path::Path;

#[test]
fn the_hill_plugin_fits_its_scene() {
    check_primitive(&example::Hill, &[vec![0.5, 1.0, 2.0], vec![4.0, 1.5, 0.7]])
        .expect("VJP agrees with finite differences");
    let report = example::fit_hill_scene().expect("fit");
    let c = &report.candidates[0];
    assert_eq!(c.status, "done");
    for (name, truth) in [("vmax", 2.0), ("k", 1.5), ("n", 2.5)] {
        let got = c.params[name];
        assert!(((got - truth) / truth).abs() < 0.02, "{name} = {got}");
    }
    assert!(c.held_out_r2.expect("held out") > 0.99);
}

#[test]
fn without_the_plugin_the_candidate_fails_with_an_unbound_name() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let text = std::fs::read_to_string(dir.join("hill.scene.ron")).expect("scene");
    let scene = Scene::from_ron(&text).expect("parses");
    let report = Fit::new(&scene, &dir, &FitOptions::default())
        .expect("starts")
        .run(|_| {});
    let c = &report.candidates[0];
    assert_eq!(c.status, "failed");
    let detail = c.detail.as_deref().unwrap_or("");
    assert!(detail.contains("unbound variable `hill`"), "{detail}");
}

#[test]
fn a_plugin_can_add_systems_and_cannot_take_builtin_names() {
    use bevy_ecs::prelude::*;
    #[derive(Resource, Default)]
    struct Steps(u32);
    fn count(mut steps: ResMut<Steps>) {
        steps.0 += 1;
    }
    struct Counter;
    impl Plugin for Counter {
        fn build(&self, plugins: &mut PluginsBuilder) {
            plugins.schedule(|s| {
                s.add_systems(count.after(Stage::Optimize));
            });
        }
    }
    let engine = PluginsBuilder::new()
        .plugin(&Counter)
        .build()
        .expect("engine");
    let scene = Scene::from_ron(
        r#"Scene(candidates: [Inline(name: "q", src: "(* a a)")],
                 parameters: Parameters(names: ["a"], init: {"a": 1.0}), steps: 7)"#,
    )
    .expect("scene");
    let options = FitOptions {
        plugins: engine,
        ..FitOptions::default()
    };
    let mut fit = Fit::new(&scene, Path::new("."), &options).expect("fit");
    fit.world_mut().init_resource::<Steps>();
    fit.run(|_| {});
    // 7 steps and the final evaluation.
    assert_eq!(fit.world_mut().resource::<Steps>().0, 8);

    #[derive(Debug)]
    struct Log;
    impl Primitive for Log {
        fn name(&self) -> &str {
            "log"
        }
        fn arity(&self) -> usize {
            1
        }
        fn forward(&self, _: &[&[f64]], _: &mut [f64]) {}
        fn vjp(&self, _: &[&[f64]], _: &[f64], _: &[f64], _: &mut [Vec<f64>]) {}
    }
    let e = PluginsBuilder::new()
        .primitive(Log)
        .build()
        .expect_err("built-in name");
    assert!(e.to_string().contains("built-in"), "{e}");
}
