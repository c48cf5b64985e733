//! `--no-reassociate` (spec/padding.md, "Sums in lanes"): by default `teil emit-c` computes a
//! long sum in lanes, another association the spec permits; with the flag every sum keeps the
//! spec's fold, on `teil emit-c` and `teil run --backend c` alike, and both kernels validate.

mod support;

use support::{teil, text, write};

/// A dot product of 200 terms and a sum of 1000: both long enough for lanes.
const PROGRAM: &str = "input var x : [200]\ninput var y : [200]\ninput var z : [1000]\n\
                       output var d : []\noutput var s : []\n\
                       d = red+ 1 (x * y)\ns = red+ 1 z\n";

#[test]
fn emit_c_computes_long_sums_in_lanes_unless_told_not_to_reassociate() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write(dir.path(), "p.teil", PROGRAM);
    let ir = |extra: &[&str]| {
        let o = teil(&[&["emit-c", &file, "--ir", "--validate"], extra].concat());
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        assert!(
            text(&o.stderr).starts_with("validated for these shapes"),
            "{}",
            text(&o.stderr)
        );
        text(&o.stdout)
    };
    let lanes = ir(&[]);
    assert_eq!(
        lanes.matches(" (another association)\n").count(),
        2,
        "{lanes}"
    );
    assert!(lanes.contains("lanes for l0 in 0..200 (another association)\n"));
    let folds = ir(&["--no-reassociate"]);
    assert!(!folds.contains("lanes"), "{folds}");
    assert!(folds.contains("  for l0 in 0..200\n    acc0 = Sum(acc0, (x[l0] * y[l0]))\n"));
    let c = text(&teil(&["emit-c", &file, "--no-reassociate"]).stdout);
    assert!(!c.contains("Sums in lanes"), "{c}");
    let c = text(&teil(&["emit-c", &file]).stdout);
    assert_eq!(c.matches("\"Sums in lanes\") */").count(), 2, "{c}");
}

#[test]
fn run_without_reassociation_prints_what_the_oracle_prints() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write(dir.path(), "p.teil", PROGRAM);
    let oracle = teil(&["run", &file, "--random-inputs", "3", "--backend", "oracle"]);
    assert_eq!(oracle.status.code(), Some(0), "{}", text(&oracle.stderr));
    for extra in [&[][..], &["--no-reassociate"][..]] {
        let args = [
            &["run", &file, "--random-inputs", "3", "--backend", "c"][..],
            extra,
        ]
        .concat();
        let c = teil(&args);
        assert_eq!(c.status.code(), Some(0), "{}", text(&c.stderr));
        // Small integers: no sum rounds, so both associations print the oracle's values.
        assert_eq!(text(&c.stdout), text(&oracle.stdout), "{extra:?}");
    }
    let help = text(&teil(&["run", "--help"]).stdout);
    assert!(help.contains("--no-reassociate"), "{help}");
    let help = text(&teil(&["emit-c", "--help"]).stdout);
    assert!(help.contains("--no-reassociate"), "{help}");
}
