//! The file-driven corpus `tests/lower/*.teil`, like cranelift's `test optimize` files: every
//! program's optimised loop IR (`teil emit-c --ir`, the text of `ir::Kernel`) at M = 1 and
//! M = 4 is an insta snapshot (`tests/snapshots/lower_corpus__NAME.snap`), and every kernel
//! validates as it is (spec/validation.md). A change to the lowering or to the passes of
//! `teil_cbackend::opt` shows as a snapshot diff to review.

mod corpus;

use teil_cbackend::Options;

#[test]
fn the_optimised_ir_of_every_corpus_program_is_its_snapshot() {
    let files = corpus::files();
    assert!(files.len() >= 10, "{files:?}");
    for f in files {
        let text = std::fs::read_to_string(&f).expect("read");
        let name = f.file_stem().and_then(|s| s.to_str()).expect("name");
        let (p, _) =
            teil::compile(&text).unwrap_or_else(|d| panic!("{name} does not check: {d:?}"));
        let mut ir = String::new();
        for pad in [1, 4] {
            let opts = Options {
                pad,
                ..Options::default()
            };
            let k = teil_cbackend::lower(&p, &opts).expect("lowers");
            let v = teil_cbackend::validate::validate(&p, &k)
                .unwrap_or_else(|e| panic!("{name} at M = {pad} does not validate: {e}"));
            assert!(v.output_cells > 0, "{name}");
            ir.push_str(&k.to_string());
        }
        insta::assert_snapshot!(name, ir);
    }
}
