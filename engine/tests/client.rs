//! The client-walk API (`walk/client.rs`), driven by hand the way a second front end drives
//! it: the same values, tape and gradients as the tree walk of the same program, bit for bit.

use ndvm_engine::error::Span;
use ndvm_engine::extension::Registry;
use ndvm_engine::prelude::*;
use ndvm_engine::prims::Prim;
use ndvm_engine::value::Value;

/// `(if (> x 0.5) (* a (exp x)) (- a))` by hand: a split, two masked arms and a merge.
fn by_hand(vm: &mut Vm<f64>, sites: &Program, b: &Bindings<f64>) -> Result<Value> {
    vm.begin(sites, b, true)?;
    let (a, x) = (vm.input(0).expect("a"), vm.input(1).expect("x"));
    let half = Value::constant(0.5f64);
    let test = vm.call_prim(sites, 0, Prim::Gt, &[x, half])?;
    let out = match vm.decide(sites, 1, test)? {
        Decision::All(true) => {
            let e = vm.call_prim(sites, 2, Prim::Exp, &[x])?;
            vm.call_prim(sites, 2, Prim::Mul, &[a, e])?
        }
        Decision::All(false) => vm.call_prim(sites, 3, Prim::Sub, &[a])?,
        Decision::Split {
            then_lanes,
            else_lanes,
        } => {
            let prev = vm.active_set();
            vm.set_active(then_lanes);
            let e = vm.call_prim(sites, 2, Prim::Exp, &[x])?;
            let t = vm.call_prim(sites, 2, Prim::Mul, &[a, e])?;
            vm.set_active(else_lanes);
            let f = vm.call_prim(sites, 3, Prim::Sub, &[a])?;
            vm.set_active(prev);
            let merged = vm.merge(sites, 1, (then_lanes, t), (else_lanes, f))?;
            vm.rejoin();
            merged
        }
    };
    vm.finish(out);
    Ok(out)
}

#[test]
fn a_hand_driven_client_equals_the_walk_bit_for_bit() {
    let src = "(if (> x 0.5) (* a (exp x)) (- a))";
    let program = Program::new(src, &["a", "x"]).expect("decodes");
    let sites = Program::client(
        src,
        &["a", "x"],
        vec![Span::new(0, 1); 4],
        Registry::default(),
    );
    let mut b = Bindings::<f64>::new();
    b.lanes("a", vec![1.5, -0.5, 2.0, 0.25])
        .lanes("x", vec![0.2, 0.7, 0.9, 0.1]);
    let mut vm = Vm::<f64>::default();
    let walk = evaluate(&mut vm, &program, &b, true).expect("walks");
    let v = by_hand(&mut vm, &sites, &b).expect("runs");
    assert_eq!(vm.stats().splits, 1, "the lanes split");
    let client = vm.evaluation(&sites, &b, v, true);
    assert_eq!(client, walk);
    // The client's tape replays for new inputs like the walk's.
    let mut next = b.clone();
    next.lanes("a", vec![1.0, 2.0, 3.0, 4.0]);
    let Replay::Held(v) = vm.replay(&sites, &next) else {
        panic!("replay");
    };
    let replayed = vm.evaluation(&sites, &next, v, true);
    assert_eq!(
        replayed,
        evaluate(&mut vm, &program, &next, true).expect("walks")
    );
}

#[test]
fn client_errors_are_located_at_the_clients_site() {
    let src = "LOAD a\nNOT\nLOAD a\nADD\n";
    let spans = vec![
        Span::new(0, 6),
        Span::new(7, 10),
        Span::new(11, 17),
        Span::new(18, 21),
    ];
    let sites = Program::client(src, &["a"], spans, Registry::default());
    let mut b = Bindings::<f32>::new();
    b.lanes("a", vec![1.0, 2.0]);
    let mut vm = Vm::<f32>::default();
    vm.begin(&sites, &b, false).expect("binds");
    let a = vm.input(0).expect("a");
    let not = vm.call_prim(&sites, 1, Prim::Not, &[a]).expect("not");
    let e = vm
        .call_prim(&sites, 3, Prim::Add, &[not, a])
        .expect_err("a boolean plus a number");
    assert_eq!(e.kind, ErrorKind::Type);
    assert_eq!(e.span.map(|s| s.line_col(src)), Some((4, 1)));
    assert_eq!(e.lanes.as_deref(), Some(&[0, 1][..]));
    // The procedures that call back into a program cannot be called by a client.
    let e = vm
        .call_prim(&sites, 3, Prim::Map, &[a, a])
        .expect_err("map");
    assert_eq!(e.kind, ErrorKind::Type);
}
