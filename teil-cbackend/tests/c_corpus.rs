//! Golden snapshots of the generated C: every program of `tests/lower/*.teil` printed as a
//! translation unit (`teil emit-c`) at M = 1 and M = 4, in exact mode and in fma mode
//! (`--fma`), one snapshot per program, padding multiple and mode
//! (`tests/snapshots/c_corpus__NAME_mM_MODE.snap`); at M = 1 also with OpenMP (`--openmp`,
//! `NAME_m1_openmp`), and one translation unit of several kernels (`run.rs`'s batches). Every change to the C the printer writes
//! shows as a snapshot diff to review; a change to the printer's code that leaves them
//! untouched leaves the C byte for byte as before.

mod corpus;

use std::path::Path;
use teil_cbackend::Options;

/// Programs for paths of the printer that no corpus program reaches, by name.
const EXTRA: [(&str, &str); 2] = [
    // A thin product (8 columns): dot products in blocks of rows, the row operand broadcast.
    (
        "extra_thin",
        "input var A : [2048 16]\ninput var B : [16 8]\noutput var C : [2048 8]\n\
         C = (A # B) .[2 3]\n",
    ),
    // An element-wise nest whose innermost loop runs over padding at M = 4, then the loop that
    // re-zeroes it (`/* padding only */`).
    (
        "extra_rezero",
        "input var x : [5 6]\noutput var y : [5 6]\ny = x + expa 1 5 (expa 1 6 1.5)\n",
    ),
];

#[test]
fn the_c_of_every_corpus_program_is_its_snapshot() {
    let files = corpus::files();
    assert!(files.len() >= 10, "{files:?}");
    let mut programs: Vec<(String, String)> = files
        .iter()
        .map(|f| {
            let name = f.file_stem().and_then(|s| s.to_str()).expect("name");
            (name.to_string(), std::fs::read_to_string(f).expect("read"))
        })
        .collect();
    programs.extend(EXTRA.iter().map(|(n, t)| (n.to_string(), t.to_string())));
    for (name, text) in programs {
        let (p, _) =
            teil::compile(&text).unwrap_or_else(|d| panic!("{name} does not check: {d:?}"));
        for pad in [1, 4] {
            for (mode, fma) in [("exact", false), ("fma", true)] {
                let opts = Options {
                    pad,
                    fma,
                    ..Options::default()
                };
                let c = teil_cbackend::emit_c(&p, &opts).expect("lowers");
                assumes_double_alignment_only(&format!("{name}_m{pad}_{mode}"), &c);
                insta::assert_snapshot!(format!("{name}_m{pad}_{mode}"), c);
            }
        }
        let mut k = teil_cbackend::lower(&p, &Options::default()).expect("lowers");
        k.openmp = true;
        insta::assert_snapshot!(
            format!("{name}_m1_openmp"),
            teil_cbackend::print::module(&[&k])
        );
    }
}

/// spec/abi.md, *Buffers*: the generated C needs buffers aligned for `double` only. It never
/// assumes more (`__builtin_assume_aligned`), and it reads or writes memory through a vector
/// type only where that type is declared `aligned(8)` (`teil_lanes_u`); other vector types
/// hold values in registers, loaded and stored with `__builtin_memcpy`.
fn assumes_double_alignment_only(name: &str, c: &str) {
    assert!(!c.contains("assume_aligned"), "{name}");
    assert!(!c.contains("__attribute__((aligned"), "{name}");
    let over_aligned: Vec<&str> = c
        .lines()
        .map(str::trim)
        .filter(|l| {
            l.starts_with("typedef") && l.contains("vector_size(") && !l.contains("aligned(8)")
        })
        .filter_map(|l| l.split_whitespace().nth(2))
        .collect();
    for t in over_aligned {
        for cast in [format!("({t} *)"), format!("(const {t} *)")] {
            assert!(
                !c.contains(&cast),
                "{name}: `{cast}` needs more than double alignment"
            );
        }
    }
    // The one type that does touch memory is declared as it must be.
    if c.contains("teil_lanes_u") {
        assert!(c.contains("aligned(8), may_alias"), "{name}");
    }
}

/// Kernels share one set of helpers and are printed one after the other.
#[test]
fn several_kernels_make_one_translation_unit() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/lower");
    let kernels: Vec<_> = ["matmul", "lanes", "two_level"]
        .iter()
        .map(|name| {
            let text = std::fs::read_to_string(dir.join(format!("{name}.teil"))).expect("read");
            let (p, _) = teil::compile(&text).expect("checks");
            let opts = Options {
                pad: 4,
                name: format!("kernel_{name}"),
                fma: true,
                ..Options::default()
            };
            teil_cbackend::lower(&p, &opts).expect("lowers")
        })
        .collect();
    let refs: Vec<_> = kernels.iter().collect();
    insta::assert_snapshot!("three_kernels", teil_cbackend::print::module(&refs));
}
