//! Adding a custom primitive: the Hill function `x^n / (k^n + x^n)` of pharmacology and gene
//! regulation, registered by a plugin, checked against finite differences, then used by a scene
//! (`hill.scene.ron` beside this file). docs/primitives.md walks through it.
//!
//! ```sh
//! cargo run --release -p ndvm-systems --example hill_plugin
//! ```

use ndvm_systems::prelude::*;
use std::path::Path;

/// `hill(x, k, n) = x^n / (k^n + x^n)` for x, k > 0.
#[derive(Debug)]
pub struct Hill;

impl Primitive for Hill {
    fn name(&self) -> &str {
        "hill"
    }

    fn arity(&self) -> usize {
        3
    }

    fn forward(&self, args: &[&[f64]], out: &mut [f64]) {
        let (x, k, n) = (args[0], args[1], args[2]);
        for l in 0..out.len() {
            let (xn, kn) = (x[l].powf(n[l]), k[l].powf(n[l]));
            out[l] = xn / (kn + xn);
        }
    }

    fn vjp(&self, args: &[&[f64]], out: &[f64], g: &[f64], grads: &mut [Vec<f64>]) {
        let (x, k, n) = (args[0], args[1], args[2]);
        for l in 0..g.len() {
            // With y = hill(x, k, n): ∂y/∂x = n·y(1−y)/x, ∂y/∂k = −n·y(1−y)/k,
            // ∂y/∂n = y(1−y)·ln(x/k).
            let s = out[l] * (1.0 - out[l]);
            grads[0][l] = g[l] * n[l] * s / x[l];
            grads[1][l] = -g[l] * n[l] * s / k[l];
            grads[2][l] = g[l] * s * (x[l] / k[l]).ln();
        }
    }
}

/// The plugin: everything it brings, registered with the engine builder.
#[derive(Debug)]
pub struct Pharmacology;

impl Plugin for Pharmacology {
    fn build(&self, plugins: &mut PluginsBuilder) {
        plugins.primitive(Hill);
    }
}

/// Fits `hill.scene.ron` with the plugin and returns the report.
pub fn fit_hill_scene() -> Result<FitReport, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let text = std::fs::read_to_string(dir.join("hill.scene.ron")).map_err(|e| e.to_string())?;
    let scene = Scene::from_ron(&text).map_err(|e| e.to_string())?;
    let engine = PluginsBuilder::new()
        .plugin(&Pharmacology)
        .build()
        .map_err(|e| e.to_string())?;
    let options = FitOptions {
        plugins: engine,
        ..FitOptions::default()
    };
    let mut fit = Fit::new(&scene, &dir, &options).map_err(|e| e.to_string())?;
    Ok(fit.run(|_| {}))
}

#[allow(dead_code)]
fn main() -> Result<(), String> {
    // Check the VJP before trusting a fit to it.
    let points = [
        vec![0.5, 1.0, 2.0],
        vec![2.0, 1.5, 1.0],
        vec![3.0, 0.7, 4.0],
    ];
    check_primitive(&Hill, &points).map_err(|e| e.to_string())?;
    println!("hill: VJP agrees with finite differences");
    let report = fit_hill_scene()?;
    print!("{}", report.table(5));
    Ok(())
}
