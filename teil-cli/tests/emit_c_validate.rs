//! `teil emit-c FILE --validate` (spec/validation.md): the verdict on standard error, the C on
//! standard output (or `-o`) only when the kernel validated; refusal for large shapes.

mod support;

use std::path::Path;
use support::{teil, text, write};

const MATMUL: &str = "input var A : [3 5]\ninput var B : [5 6]\ninput var s : []\n\
                      output var C : [3 6]\nC = (A # B) .[2 3]\nC = C / s\n";

#[test]
fn a_valid_kernel_is_reported_and_printed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write(dir.path(), "mm.teil", MATMUL);
    let o = teil(&["emit-c", &file, "--pad", "4", "--validate"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stderr),
        "validated for these shapes: A [3, 5], B [5, 6], s [], C [3, 6] with M = 4: 18 output \
         cells equal the semantics up to reassociation of + and *, 65 padding cells are zero\n"
    );
    // The C is exactly what emit-c prints without the flag.
    let plain = teil(&["emit-c", &file, "--pad", "4"]);
    assert_eq!(plain.status.code(), Some(0));
    assert!(text(&plain.stderr).is_empty());
    assert_eq!(o.stdout, plain.stdout);
    assert!(text(&o.stdout).contains("void teil_kernel("));
}

#[test]
fn validation_with_an_output_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write(
        dir.path(),
        "cfd.teil",
        "input var A : [3 3]\ninput var B : [3 3]\ninput var C : [3 3]\n\
         input var u : [3 3 3]\noutput var v : [3 3 3]\n\
         v = (A # B # C # u) .[2 7] .[3 6] .[4 5]\n",
    );
    let out = dir.path().join("cfd.c");
    let o = teil(&[
        "emit-c",
        &file,
        "--validate",
        "--pad",
        "3",
        "-o",
        &out.to_string_lossy(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).is_empty());
    assert!(text(&o.stderr).starts_with("validated for these shapes: A [3, 3], B [3, 3], C [3, 3], u [3, 3, 3], v [3, 3, 3] with M = 3: 27 output cells"));
    let c = std::fs::read_to_string(&out).expect("written");
    assert!(c.contains("lifted contraction"));
}

#[test]
fn shapes_too_large_to_validate_are_refused_without_output() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write(
        dir.path(),
        "big.teil",
        "input var A : [200 200]\ninput var B : [200 200]\noutput var C : [200 200]\n\
         C = (A # B) .[2 3]\n",
    );
    let out = dir.path().join("big.c");
    let o = teil(&["emit-c", &file, "--validate", "-o", &out.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stdout).is_empty());
    assert!(
        text(&o.stderr).starts_with(
            // 200 x 200 cells, each 801 oracle steps (`oracle_work`: 200 terms of a product
            // in parentheses, 4 steps each, and the contraction), and the kernel's 8,080,000.
            "error: cannot validate: symbolic evaluation would take about 40120000 operations"
        ),
        "{}",
        text(&o.stderr)
    );
    assert!(!out.exists());
}

#[test]
fn rejected_programs_are_reported_before_validation() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write(
        dir.path(),
        "bad.teil",
        "var A : [2]\nvar B : [3]\nA = A + B\n",
    );
    let o = teil(&["emit-c", &file, "--validate"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stdout).is_empty());
    assert!(!text(&o.stderr).contains("validated"));
}

#[test]
fn the_example_of_the_validation_chapter_validates_at_every_padding() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let spec = std::fs::read_to_string(root.join("spec/validation.md")).expect("spec");
    let start = spec.find("```teil ok\n").expect("example") + "```teil ok\n".len();
    let end = spec[start..].find("```").expect("closing fence") + start;
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write(dir.path(), "cfd.teil", &spec[start..end]);
    for pad in ["1", "3", "4"] {
        let o = teil(&["emit-c", &file, "--validate", "--pad", pad]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains(&format!("with M = {pad}: 27 output cells")),
            "{}",
            text(&o.stderr)
        );
    }
}

#[test]
fn kernels_over_identity_valued_data_validate_at_24_and_64() {
    // Issue 23: the data `-0` (a sum's identity) and `1` (a product's) folded into a target
    // whose folds start from that identity.
    let dir = tempfile::tempdir().expect("temp dir");
    for n in [24, 64] {
        for (lit, op) in [("(-0)", "red+"), ("1", "red*")] {
            let file = write(
                dir.path(),
                "id.teil",
                &format!(
                    "output var r : [{n}]\nvar A : [{n} {n}]\n\
                     A = expa 1 {n} (expa 1 {n} {lit})\nr = {op} 1 A\n"
                ),
            );
            let o = teil(&["emit-c", &file, "--validate"]);
            assert_eq!(
                o.status.code(),
                Some(0),
                "{lit} {op} {n}: {}",
                text(&o.stderr)
            );
            assert!(
                text(&o.stderr).starts_with(&format!(
                    "validated for these shapes: r [{n}] with M = 1: {n} output cells equal"
                )),
                "{}",
                text(&o.stderr)
            );
        }
    }
}
