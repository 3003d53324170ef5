//! Runs a campaign and prints its table and failures: `cargo run --release -p ndvm-difftest --example campaign -- N SEED`.
fn main() {
    let mut args = std::env::args().skip(1);
    let n = args.next().and_then(|s| s.parse().ok()).unwrap_or(500);
    let seed = args.next().and_then(|s| s.parse().ok()).unwrap_or(1234);
    let c = ndvm_difftest::Campaign {
        n,
        seed,
        ..Default::default()
    };
    let r = ndvm_difftest::campaign(&c, |_| {});
    print!("{}", r.table());
    println!("rejected {:?} divergent {}", r.rejected, r.g4_divergent);
    for f in &r.failures {
        println!(
            "#{} {} {}\n  {}\n  min: {:?}",
            f.id, f.gate, f.detail, f.src, f.minimized
        );
    }
}
