//! The guard front ends (`teil::guard`): the index-notation corpus `tests/tin/*.tin`, the paper's
//! section-2 kernels, einsum misuse with snapshot diagnostics, the shape of lowered programs
//! (greedy pairwise contraction), and robustness on arbitrary input.
//!
//! Every `.tin` file starts with `// expect: ok` or `// expect: CODE...` (the distinct codes it
//! must produce). Rendered diagnostics and lowered programs are snapshots under
//! `teil/tests/snapshots/guard__*.snap`. What the lowered programs compute is tested through the
//! evaluators in `teil-interp/tests/guard_kernels.rs` and `teil-interp/tests/einsum_random.rs`.

use proptest::prelude::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use teil::ast::{ElemType, Expr, ExprKind};
use teil::fmt::{self, Style};
use teil::guard;
use teil::render::{render_json, render_text};
use teil::{CheckedProgram, Code, Diagnostic};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn tin_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("tests/tin"))
        .expect("tests/tin exists")
        .map(|e| e.expect("readable directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "tin"))
        .collect();
    files.sort();
    files
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn tin(name: &str) -> String {
    read(&root().join("tests/tin").join(name))
}

/// The codes named on the first line; empty for `ok`.
fn expected(path: &Path, src: &str) -> BTreeSet<String> {
    let first = src.lines().next().unwrap_or_default();
    let list = first
        .strip_prefix("// expect:")
        .unwrap_or_else(|| panic!("{}: first line must be `// expect: ...`", path.display()))
        .trim();
    if list == "ok" {
        return BTreeSet::new();
    }
    let codes: BTreeSet<String> = list.split_whitespace().map(str::to_string).collect();
    for c in &codes {
        assert!(
            Code::parse(c).is_some(),
            "{}: unknown code {c}",
            path.display()
        );
    }
    codes
}

fn codes(diags: &[Diagnostic]) -> BTreeSet<String> {
    diags.iter().map(|d| d.code.as_str().to_string()).collect()
}

fn render_all(diags: &[Diagnostic], name: &str, src: &str) -> String {
    diags
        .iter()
        .map(|d| render_text(d, name, src, false))
        .collect()
}

/// Printing a lowered program in either syntax and parsing it again gives the same program,
/// with the same verdict: `teil lower` output is an ordinary TeIL file.
fn assert_round_trips(checked: &CheckedProgram, what: &str) {
    for style in [Style::Prefix, Style::Infix] {
        let text = fmt::program(checked.program(), style);
        let again = teil::compile(&text)
            .unwrap_or_else(|d| panic!("{what}: {style:?} output rejected: {d:?}\n{text}"));
        assert!(
            again.0.program().same_as(checked.program()),
            "{what}: {style:?} output is a different program:\n{text}"
        );
    }
}

#[test]
fn tin_corpus() {
    let files = tin_files();
    assert!(files.len() >= 20, "only {} .tin files", files.len());
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let src = read(&path);
        let want = expected(&path, &src);
        let outcome = guard::load(&name, &src);
        let diags: &[Diagnostic] = match &outcome {
            Ok((_, w)) => w,
            Err(d) => d,
        };
        assert_eq!(
            codes(diags),
            want,
            "{name}:\n{}",
            render_all(diags, &name, &src)
        );
        let has_error = want.iter().any(|c| c.starts_with('E'));
        assert_eq!(outcome.is_err(), has_error, "{name}");
        for d in diags {
            for span in std::iter::once(&d.primary.span).chain(d.secondary.iter().map(|l| &l.span))
            {
                assert!(
                    span.start <= span.end && span.end <= src.len(),
                    "{name}: span {span:?}"
                );
            }
        }
        let mut snap = render_all(diags, &name, &src);
        if diags.is_empty() {
            snap.push_str("(no diagnostics)\n");
        }
        if let Ok((checked, _)) = &outcome {
            assert_round_trips(checked, &name);
            snap.push_str("\nlowered:\n");
            snap.push_str(&fmt::program(checked.program(), Style::Prefix));
        }
        let stem = name.trim_end_matches(".tin");
        insta::with_settings!({ input_file => &path, omit_expression => true }, {
            insta::assert_snapshot!(format!("tin__{stem}"), snap);
        });
    }
}

fn lowered(name: &str) -> CheckedProgram {
    let src = tin(name);
    match guard::load(name, &src) {
        Ok((c, _)) => c,
        Err(d) => panic!("{name}: {}", render_all(&d, name, &src)),
    }
}

fn statements_of(p: &CheckedProgram) -> Vec<String> {
    p.program()
        .stmts
        .iter()
        .map(|s| format!("{} = {}", s.target.name, fmt::expr(&s.value, Style::Prefix)))
        .collect()
}

/// Figures 2a and 3b lower to exactly the TeIL programs of Fig. 10a and 10b.
#[test]
fn paper_kernels_lower_to_figure_10() {
    assert_eq!(
        statements_of(&lowered("fig2a.tin")),
        ["A = contr 3 4 (prod B C)"]
    );
    assert_eq!(
        statements_of(&lowered("fig3b.tin")),
        ["C = contr 1 3 (prod A B)"]
    );
    // Fig. 10c, for both TC kernels of Fig. 4: the same program.
    let (a, b) = (lowered("fig4a.tin"), lowered("fig4b.tin"));
    assert!(a.program().same_as(b.program()));
    assert_eq!(statements_of(&a), ["A = B", "A = add A C"]);
    // Fig. 2b and 2c: k is summed first (it occurs once), then C multiplies along i.
    assert_eq!(
        statements_of(&lowered("fig2b.tin")),
        ["A = diag 1 3 (prod (red+ 3 B) C)"]
    );
    assert_eq!(
        statements_of(&lowered("fig2c.tin")),
        ["A = transp 1 2 (diag 2 3 (prod (red+ 1 B) C))"]
    );
}

/// Fig. 3a is rejected, and the diagnostic names `k` and labels both of its occurrences with
/// the extents they get (4 in `A`, 5 in `B`).
#[test]
fn fig3a_is_rejected_naming_k() {
    let src = tin("fig3a.tin");
    let diags = guard::load("fig3a.tin", &src).expect_err("Fig. 3a must be rejected");
    let k = diags
        .iter()
        .find(|d| d.message.contains("`k`"))
        .unwrap_or_else(|| panic!("no diagnostic names k: {diags:?}"));
    assert_eq!(k.code, Code::TinExtentConflict);
    let labels: Vec<(&str, &str)> = std::iter::once(&k.primary)
        .chain(&k.secondary)
        .map(|l| (&src[l.span.clone()], l.message.as_str()))
        .collect();
    assert_eq!(
        labels,
        [
            ("k", "`k` has extent 4 here (dimension 1 of `A : [4, 6]`)"),
            ("k", "`k` has extent 5 here (dimension 1 of `B : [5, 6]`)"),
        ]
    );
    assert!(
        diags.iter().all(|d| d.is_error()),
        "no echo warnings: {diags:?}"
    );
}

#[test]
fn load_dispatches_on_the_extension() {
    let tin_src = "alloc A : [2]\nalloc B : [2]\nA(i) = B(i)";
    assert!(guard::load("k.tin", tin_src).is_ok());
    assert!(guard::load("dir/K.TIN", tin_src).is_ok());
    // The same text is not TeIL.
    let err = guard::load("k.teil", tin_src).unwrap_err();
    assert_eq!(err[0].code, Code::Syntax);
    assert!(guard::load("<stdin>", "alloc A : [2]\nA = A").is_ok());
    assert!(!guard::is_index_notation("x.tin.teil"));
}

// ---------------------------------------------------------------------------------------------
// einsum

fn einsum_ok(eq: &str, shapes: &[&[u64]]) -> CheckedProgram {
    match guard::einsum(eq, shapes) {
        Ok((c, w)) => {
            assert!(w.is_empty(), "{eq}: {w:?}");
            c
        }
        Err(d) => panic!("{eq}: {}", render_all(&d, "<equation>", eq)),
    }
}

#[test]
fn einsum_programs_have_the_documented_interface() {
    let p = einsum_ok("ij,jk->ik", &[&[2, 3], &[3, 4]]);
    assert_eq!(
        fmt::program(p.program(), Style::Prefix),
        "input alloc in0 : [2, 3]\ninput alloc in1 : [3, 4]\noutput alloc out : [2, 4]\n\
         out = contr 2 3 (prod in0 in1)\n"
    );
    let interface: Vec<&str> = p.interface().map(|d| d.name.name.as_str()).collect();
    assert_eq!(interface, ["in0", "in1", "out"]);
}

/// The output shape of each equation, as NumPy defines it.
#[test]
fn einsum_output_shapes_follow_numpy() {
    for (eq, shapes, out) in [
        ("ij,jk->ik", vec![vec![2, 3], vec![3, 4]], vec![2, 4]),
        ("ij,jk", vec![vec![2, 3], vec![3, 4]], vec![2, 4]),
        ("ji", vec![vec![2, 3]], vec![3, 2]),
        ("ba", vec![vec![2, 3]], vec![3, 2]),
        ("Ba", vec![vec![2, 3]], vec![2, 3]),
        ("ii", vec![vec![3, 3]], vec![]),
        ("ii->i", vec![vec![3, 3]], vec![3]),
        ("iij->ji", vec![vec![3, 3, 2]], vec![2, 3]),
        (",ij", vec![vec![], vec![2, 3]], vec![2, 3]),
        (",", vec![vec![], vec![]], vec![]),
        ("i,j", vec![vec![2], vec![3]], vec![2, 3]),
        ("j,i", vec![vec![2], vec![3]], vec![3, 2]),
        ("i,i", vec![vec![4], vec![4]], vec![]),
        ("i,i->i", vec![vec![4], vec![4]], vec![4]),
        (
            "...ij,...jk",
            vec![vec![5, 2, 3], vec![5, 3, 4]],
            vec![5, 2, 4],
        ),
        (
            "...ij,...jk->...ik",
            vec![vec![5, 1, 2, 3], vec![4, 3, 4]],
            vec![5, 4, 2, 4],
        ),
        ("i...->...", vec![vec![2, 3, 4]], vec![3, 4]),
        ("...,...", vec![vec![1, 3], vec![2, 1]], vec![2, 3]),
        ("a...a", vec![vec![3, 1, 3]], vec![1]),
        ("ij->", vec![vec![2, 3]], vec![]),
        ("i->...i", vec![vec![2]], vec![2]),
        // An extent of 1 broadcasts across operands, for letters as under `...`.
        ("i,i->i", vec![vec![3], vec![1]], vec![3]),
        ("i,i->i", vec![vec![1], vec![3]], vec![3]),
        ("i,i", vec![vec![1], vec![5]], vec![]),
        ("ij,j->i", vec![vec![2, 3], vec![1]], vec![2]),
        ("ij,ij->ij", vec![vec![1, 3], vec![2, 1]], vec![2, 3]),
        ("ii,i->i", vec![vec![1, 1], vec![3]], vec![3]),
        (
            "bij,bjk->bik",
            vec![vec![1, 2, 3], vec![4, 3, 5]],
            vec![4, 2, 5],
        ),
        ("i,i,i->i", vec![vec![1], vec![4], vec![1]], vec![4]),
        ("...i,...i->...i", vec![vec![1, 3], vec![4, 1]], vec![4, 3]),
        // Any Unicode letter is a subscript; the implicit output is in code-point order.
        ("αβ,βγ->αγ", vec![vec![2, 3], vec![3, 4]], vec![2, 4]),
        ("βα,γβ", vec![vec![2, 3], vec![4, 2]], vec![3, 4]),
        ("αz", vec![vec![2, 3]], vec![3, 2]),
        ("ÄÄ->Ä", vec![vec![3, 3]], vec![3]),
    ] {
        let shapes: Vec<&[u64]> = shapes.iter().map(Vec::as_slice).collect();
        let p = einsum_ok(eq, &shapes);
        assert_eq!(p.var_shape("out"), Some(out.as_slice()), "{eq}");
        assert_round_trips(&p, eq);
    }
}

/// Operands with an extent of 0: no program, NumPy's result shape (values: teil-py's tests).
#[test]
fn einsum_zero_extents_give_numpy_result_shapes() {
    for (eq, shapes, out) in [
        ("ij->i", vec![vec![2, 0]], vec![2]),
        ("ij->j", vec![vec![2, 0]], vec![0]),
        ("i,i", vec![vec![0], vec![0]], vec![]),
        ("ij,jk", vec![vec![2, 0], vec![0, 3]], vec![2, 3]),
        ("i,i->i", vec![vec![0], vec![1]], vec![0]),
        ("ij,j->i", vec![vec![2, 0], vec![1]], vec![2]),
        ("ii->i", vec![vec![0, 0]], vec![0]),
        ("...,...", vec![vec![0], vec![1]], vec![0]),
        (
            "bij,bjk->bik",
            vec![vec![0, 2, 3], vec![1, 3, 4]],
            vec![0, 2, 4],
        ),
    ] {
        match guard::einsum_outcome(eq, &shapes) {
            Ok(guard::EinsumOutcome::Empty { shape, .. }) => assert_eq!(shape, out, "{eq}"),
            other => panic!("{eq}: {other:?}"),
        }
        // `einsum` itself returns programs only: E0102 at the first empty operand's term.
        let err = guard::einsum(eq, &shapes).unwrap_err();
        assert_eq!(err.len(), 1, "{eq}");
        assert_eq!(err[0].code, Code::ZeroExtent, "{eq}");
    }
    // Every other check still applies: 0 broadcasts only against 1, ranks must fit.
    for (eq, shapes, code) in [
        ("i,i->i", vec![vec![0], vec![3]], Code::EinsumExtentConflict),
        (
            "...i,...i",
            vec![vec![0, 2], vec![3, 2]],
            Code::EinsumBroadcast,
        ),
        ("ij->i", vec![vec![0]], Code::EinsumRankMismatch),
    ] {
        let err = guard::einsum_outcome(eq, &shapes).unwrap_err();
        let codes: Vec<Code> = err.iter().map(|d| d.code).collect();
        assert_eq!(codes, [code], "{eq}");
    }
    // Without an extent of 0, the outcome is einsum's program.
    match guard::einsum_outcome("ij,jk->ik", &[[2u64, 3], [3, 4]]) {
        Ok(guard::EinsumOutcome::Program(p, w)) => {
            assert!(w.is_empty());
            assert_eq!(p.var_shape("out"), Some(&[2u64, 4][..]));
        }
        other => panic!("{other:?}"),
    }
}

/// A misuse case: its diagnostics (text and JSON) as a snapshot, and the codes asserted.
fn misuse(name: &str, eq: &str, shapes: &str, want: &[&str]) {
    let (diags, src_name, src) = match guard::parse_shapes(shapes) {
        Err(d) => (vec![d], "<shapes>", shapes),
        Ok(s) => match guard::einsum(eq, &s) {
            Err(d) => (d, "<equation>", eq),
            Ok(_) => panic!("{name}: `{eq}` with {shapes} was accepted"),
        },
    };
    let got: Vec<&str> = diags.iter().map(|d| d.code.as_str()).collect();
    assert_eq!(got, want, "{name}");
    let mut snap = format!("equation: {eq}\nshapes: {shapes}\n\n");
    for d in &diags {
        snap.push_str(&render_text(d, src_name, src, false));
        snap.push_str(&render_json(d, src_name, src));
        snap.push('\n');
    }
    insta::with_settings!({ omit_expression => true }, {
        insta::assert_snapshot!(format!("einsum__{name}"), snap);
    });
}

#[test]
fn einsum_misuse_gives_clear_errors() {
    misuse("invalid_character", "ij,j$->i", "[[2,3],[3]]", &["E0401"]);
    misuse("digit", "i2,2->i", "[[2,3],[3]]", &["E0401"]);
    misuse("invalid_characters", "i2,3$->i2", "[[2,3],[3]]", &["E0401"]);
    misuse("arrow_twice", "ij->i->j", "[[2,3]]", &["E0401"]);
    misuse("stray_dash", "ij-i", "[[2,3]]", &["E0401"]);
    misuse("comma_in_output", "ij->i,j", "[[2,3]]", &["E0401"]);
    misuse("lone_dot", "i..j", "[[2,3,4]]", &["E0401"]);
    misuse("two_ellipses", "...i...->i", "[[2,3]]", &["E0401"]);
    misuse("too_few_shapes", "ij,jk->ik", "[[2,3]]", &["E0402"]);
    misuse("too_many_shapes", "ij->ji", "[[2,3],[3]]", &["E0402"]);
    misuse("rank_mismatch", "ij,jk->ik", "[[2,3,4],[3,4]]", &["E0403"]);
    misuse("scalar_with_shape", ",i->i", "[[2],[2]]", &["E0403"]);
    misuse("ellipsis_rank", "...ijk->k", "[[2,3]]", &["E0403"]);
    misuse("extent_conflict", "ij,jk->ik", "[[2,3],[4,5]]", &["E0404"]);
    misuse(
        "extent_one_inside_one_operand",
        "ii,i->i",
        "[[1,3],[3]]",
        &["E0404"],
    );
    misuse(
        "extent_one_then_two_others",
        "i,i,i",
        "[[1],[2],[3]]",
        &["E0404"],
    );
    misuse("diagonal_conflict", "ii->i", "[[2,3]]", &["E0404"]);
    misuse("output_unknown", "ij->iz", "[[2,3]]", &["E0405"]);
    misuse("output_repeated", "ij->ii", "[[2,2]]", &["E0406"]);
    misuse(
        "broadcast_mismatch",
        "...i,...i->...i",
        "[[2,3],[4,3]]",
        &["E0407"],
    );
    misuse("output_without_ellipsis", "...i->i", "[[2,3]]", &["E0407"]);
    misuse("zero_extent", "ij->j", "[[2,0]]", &["E0102"]);
    misuse("shapes_not_nested", "ij->ji", "[2,3]", &["E0408"]);
    misuse("shapes_unclosed", "ij->ji", "[[2,3]", &["E0408"]);
    misuse("shapes_trailing", "ij->ji", "[[2,3]] x", &["E0408"]);
    misuse("shapes_negative", "ij->ji", "[[2,-3]]", &["E0408"]);
    misuse(
        "shapes_overflow",
        "i->i",
        "[[184467440737095516160]]",
        &["E0408"],
    );
    let many = vec!["i"; guard::MAX_EINSUM_OPERANDS + 1].join(",");
    let shapes = format!(
        "[{}]",
        vec!["[2]"; guard::MAX_EINSUM_OPERANDS + 1].join(",")
    );
    misuse("too_many_operands", &many, &shapes, &["E0409"]);
}

/// The einsum front end in another element type (`einsum_elem`): every variable, the
/// temporaries included, is declared `f32`; the statements are those of the `f64` program.
#[test]
fn einsum_in_f32_declares_every_variable_f32() {
    let (p, w) = guard::einsum_elem("ij,jk->ik", &[[2u64, 3], [3, 4]], ElemType::F32)
        .unwrap_or_else(|d| panic!("{d:?}"));
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(
        fmt::program(p.program(), Style::Prefix),
        "input alloc in0 : f32[2, 3]\ninput alloc in1 : f32[3, 4]\noutput alloc out : f32[2, 4]\n\
         out = contr 2 3 (prod in0 in1)\n"
    );
    assert_eq!(p.var_elem("out"), Some(ElemType::F32));
    // Seven operands: six statements through temporaries, all of them f32.
    let shapes: [&[u64]; 7] = [
        &[8, 9],
        &[9, 10],
        &[10, 11],
        &[11, 12],
        &[12, 13],
        &[13, 8],
        &[8],
    ];
    let eq = "ab,bc,cd,de,ef,fa,a->b";
    let (p, _) = guard::einsum_elem(eq, &shapes, ElemType::F32).unwrap_or_else(|d| panic!("{d:?}"));
    assert!(
        p.program()
            .decls
            .iter()
            .filter(|d| d.qualifier.is_none())
            .count()
            >= 5
    );
    assert!(p.program().decls.iter().all(|d| d.elem == ElemType::F32));
    assert_round_trips(&p, eq);
    let f64 = einsum_ok(eq, &shapes);
    assert_eq!(statements_of(&p), statements_of(&f64));
    // The default is f64, as the explicit element type gives it.
    let (explicit, _) = guard::einsum_elem(eq, &shapes, ElemType::F64).expect("accepted");
    assert!(explicit.program().same_as(f64.program()));
    assert!(f64.program().decls.iter().all(|d| d.elem == ElemType::F64));
}

/// The element type changes the declarations and nothing else: the same equations are
/// accepted with the same shapes and statements, the same ones rejected with the same
/// diagnostics, and operands with an extent of 0 give the same outcome.
#[test]
fn einsum_element_type_changes_only_the_declarations() {
    let accepted: [(&str, Vec<Vec<u64>>); 9] = [
        ("ij,jk", vec![vec![2, 3], vec![3, 4]]),
        ("iij->ji", vec![vec![3, 3, 2]]),
        (",ij", vec![vec![], vec![2, 3]]),
        ("i,i", vec![vec![4], vec![4]]),
        ("...ij,...jk->...ik", vec![vec![5, 1, 2, 3], vec![4, 3, 4]]),
        ("i->...i", vec![vec![2]]),
        ("ij,ij->ij", vec![vec![1, 3], vec![2, 1]]),
        ("i,j,ij->", vec![vec![100], vec![100], vec![100, 100]]),
        ("ij,ji->ij", vec![vec![2, 3], vec![3, 2]]),
    ];
    for (eq, shapes) in accepted {
        let shapes: Vec<&[u64]> = shapes.iter().map(Vec::as_slice).collect();
        let a = einsum_ok(eq, &shapes);
        let (b, w) = guard::einsum_elem(eq, &shapes, ElemType::F32)
            .unwrap_or_else(|d| panic!("{eq}: {d:?}"));
        assert!(w.is_empty(), "{eq}: {w:?}");
        assert_round_trips(&b, eq);
        let (da, db) = (&a.program().decls, &b.program().decls);
        assert_eq!(da.len(), db.len(), "{eq}");
        for (x, y) in da.iter().zip(db) {
            assert_eq!(
                (&x.name.name, x.qualifier, x.shape()),
                (&y.name.name, y.qualifier, y.shape()),
                "{eq}"
            );
            assert_eq!((x.elem, y.elem), (ElemType::F64, ElemType::F32), "{eq}");
        }
        assert_eq!(statements_of(&a), statements_of(&b), "{eq}");
    }
    let rejected: [(&str, Vec<Vec<u64>>); 8] = [
        ("ij,j$->i", vec![vec![2, 3], vec![3]]),
        ("ij,jk->ik", vec![vec![2, 3]]),
        ("ij,jk->ik", vec![vec![2, 3], vec![4, 5]]),
        ("ij->iz", vec![vec![2, 3]]),
        ("...i,...i->...i", vec![vec![2, 3], vec![4, 3]]),
        ("ij->j", vec![vec![2, 0]]),
        ("ij->ij", vec![vec![1 << 32, 1 << 31]]),
        ("ii->i", vec![vec![2, 3]]),
    ];
    for (eq, shapes) in rejected {
        let a = guard::einsum(eq, &shapes).unwrap_err();
        let b = guard::einsum_elem(eq, &shapes, ElemType::F32).unwrap_err();
        assert_eq!(a, b, "{eq}");
    }
    for (eq, shapes) in [
        ("ij,jk", vec![vec![2, 0], vec![0, 3]]),
        ("i,i->i", vec![vec![0], vec![3]]),
    ] {
        let a = guard::einsum_outcome(eq, &shapes);
        let b = guard::einsum_outcome_elem(eq, &shapes, ElemType::F32);
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "{eq}");
    }
}

/// Shape limits are the checker's: the lowered program is rejected with TeIL's own codes,
/// pointing into the equation.
#[test]
fn einsum_limits_are_enforced_by_the_checker() {
    // 2^63 elements: over the 2^63 - 1 of E0103.
    let err = guard::einsum("ij->ij", &[[1u64 << 32, 1 << 31]]).unwrap_err();
    assert_eq!(err[0].code, Code::DeclTooLarge);
    assert!(err[0].primary.span.end <= "ij->ij".len());
    let eq: String = ('a'..='z').chain('A'..='H').collect();
    let err = guard::einsum(&eq, &[vec![1u64; 34]]).unwrap_err();
    assert!(
        err.iter().any(|d| d.code == Code::DeclRankTooLarge),
        "{err:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// The shape of lowered programs

fn prods(e: &Expr) -> usize {
    let mut n = 0;
    e.walk(&mut |x| n += usize::from(matches!(x.kind, ExprKind::Prod(..))));
    n
}

/// The largest number of elements of any expression node or temporary in the program.
fn largest_intermediate(p: &CheckedProgram) -> u128 {
    let mut max = 0u128;
    for s in &p.program().stmts {
        s.value.walk(&mut |e| {
            if !matches!(e.kind, ExprKind::Prod(..)) {
                max = max.max(p.shape(e).iter().map(|&n| u128::from(n)).product());
            }
        });
    }
    max
}

#[test]
fn many_operands_are_contracted_pairwise() {
    // A cycle of six matrices and a vector: seven operands, six pairwise contractions, each in
    // a statement of its own with a single product, and no intermediate larger than the largest
    // operand.
    let shapes: [&[u64]; 7] = [
        &[8, 9],
        &[9, 10],
        &[10, 11],
        &[11, 12],
        &[12, 13],
        &[13, 8],
        &[8],
    ];
    let p = einsum_ok("ab,bc,cd,de,ef,fa,a->b", &shapes);
    let stmts = &p.program().stmts;
    assert_eq!(
        stmts.len(),
        6,
        "{}",
        fmt::program(p.program(), Style::Prefix)
    );
    for s in stmts {
        assert!(
            prods(&s.value) <= 1,
            "{}",
            fmt::expr(&s.value, Style::Prefix)
        );
    }
    assert!(
        largest_intermediate(&p) <= 13 * 12,
        "{}",
        fmt::program(p.program(), Style::Prefix)
    );
}

#[test]
fn the_planned_order_avoids_outer_products() {
    // `i,j,ij->`: multiplying the vectors first would build a 100 x 100 outer product.
    let p = einsum_ok("i,j,ij->", &[&[100], &[100], &[100, 100]]);
    let temps: Vec<u64> = p
        .program()
        .decls
        .iter()
        .filter(|d| d.qualifier.is_none())
        .map(|d| d.shape().iter().product())
        .collect();
    assert!(
        temps.iter().all(|&n| n <= 100),
        "{}",
        fmt::program(p.program(), Style::Prefix)
    );
    // Summed indices that occur once are reduced before any product.
    let p = einsum_ok("ijk,k->i", &[&[2, 3, 4], &[4]]);
    assert_eq!(
        statements_of(&p),
        ["out = contr 2 3 (prod (red+ 2 in0) in1)"]
    );
    // Hadamard products are element-wise, transposed where needed.
    let p = einsum_ok("ij,ji->ij", &[&[2, 3], &[3, 2]]);
    assert_eq!(statements_of(&p), ["out = mul in0 (transp 1 2 in1)"]);
}

/// Five or more operands in index notation: the same pairwise lowering.
#[test]
fn tin_chain_is_contracted_pairwise() {
    let p = lowered("chain5.tin");
    assert!(p.program().stmts.len() >= 5);
    for s in &p.program().stmts {
        assert!(
            prods(&s.value) <= 1,
            "{}",
            fmt::expr(&s.value, Style::Prefix)
        );
    }
    assert!(largest_intermediate(&p) <= 6 * 5);
    let p = lowered("unqualified.tin");
    let interface: Vec<&str> = p.interface().map(|d| d.name.name.as_str()).collect();
    assert_eq!(interface, ["A", "B", "C", "s"]);
}

/// Long right-hand sides are split over temporaries so that every printed statement stays
/// inside the parser's depth limit.
#[test]
fn long_statements_stay_inside_the_depth_limit() {
    let terms: Vec<String> = (0..200).map(|k| format!("{}.5 * B(j, i)", k % 7)).collect();
    let src = format!(
        "alloc A : [2, 3]\nalloc B : [3, 2]\nalloc s : []\nA(i, j) = {} - s\n",
        terms.join(" + ")
    );
    let (p, w) = guard::index_notation(&src).expect("accepted");
    assert!(w.is_empty());
    assert_round_trips(&p, "200 terms");
    for s in &p.program().stmts {
        assert!(s.value.depth() <= 2 * 40, "{}", s.value.depth());
    }
}

// ---------------------------------------------------------------------------------------------
// Robustness: no input makes a front end panic.

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn einsum_never_panics(eq in "[a-dA-B ,.>-]{0,14}", shapes in proptest::collection::vec(proptest::collection::vec(1u64..4, 0..4), 0..4)) {
        let f32 = guard::einsum_elem(&eq, &shapes, ElemType::F32);
        match guard::einsum(&eq, &shapes) {
            Ok((p, _)) => {
                prop_assert!(p.var_shape("out").is_some());
                // The f32 program: the same verdict, shapes and statements.
                let (q, _) = f32.expect("accepted in f64, so in f32");
                prop_assert_eq!(p.var_shape("out"), q.var_shape("out"));
                prop_assert_eq!(statements_of(&p), statements_of(&q));
            }
            Err(d) => {
                prop_assert!(!d.is_empty());
                for x in &d {
                    prop_assert!(x.primary.span.end <= eq.len());
                }
                prop_assert_eq!(Err(d), f32.map(|_| ()));
            }
        }
    }

    #[test]
    fn shapes_parser_never_panics(text in "[\\[\\], 0-9x]{0,20}") {
        if let Ok(s) = guard::parse_shapes(&text) {
            prop_assert!(text.contains('['));
            prop_assert!(s.len() <= text.len());
        }
    }

    #[test]
    fn tin_never_panics(body in "[ABs(),ijk =+*/\\-0-9.\n]{0,40}") {
        let src = format!("alloc A : [2, 3]\nalloc B : [3]\nalloc s : []\n{body}");
        match guard::index_notation(&src) {
            Ok((p, _)) => assert_round_trips(&p, &src),
            Err(d) => prop_assert!(d.iter().any(Diagnostic::is_error)),
        }
    }
}

/// Right-hand sides just inside the nesting limit are lowered (no stack overflow on a test
/// thread's stack) and print within TeIL's own limit.
#[test]
fn deep_statements_at_the_limit_are_lowered() {
    let mut rhs = "B(i, k)".to_string();
    for n in 0..200 {
        rhs = match n % 4 {
            0 => format!("({rhs} + C(k))"),
            1 => format!("({rhs} * 2)"),
            2 => format!("-({rhs} / s)"),
            _ => format!("({rhs} - B(i, k) * C(k))"),
        };
    }
    let src =
        format!("alloc A : [2]\nalloc B : [2, 3]\nalloc C : [3]\nalloc s : []\nA(i) = {rhs}\n");
    let (p, _) = guard::index_notation(&src).unwrap_or_else(|d| panic!("{:?}", d[0]));
    assert_round_trips(&p, "deep statement");
    let parens = format!(
        "alloc A : [2]\nA(i) = {}A(i){}\n",
        "(".repeat(500),
        ")".repeat(500)
    );
    let (p, _) = guard::index_notation(&parens).unwrap_or_else(|d| panic!("{:?}", d[0]));
    assert_eq!(statements_of(&p), ["A = A"]);
}

/// An index-notation statement over `f32` tensors that needs a temporary: the temporary is
/// declared in the statement's element type, so the program checks and computes in binary32.
#[test]
fn tin_temporaries_take_the_statement_element_type() {
    let src = "input var A : f32[2, 3]\ninput var B : f32[3, 4]\ninput var C : f32[4, 2]\n\
               output var D : f32[2, 2]\nD(i, l) = A(i, j) * B(j, k) * C(k, l)\n";
    let (checked, _) = teil::guard::index_notation(src).unwrap_or_else(|d| panic!("{d:?}"));
    let temps: Vec<_> = (checked.program().decls.iter())
        .filter(|d| d.name.name.starts_with("_t"))
        .collect();
    assert!(!temps.is_empty(), "the product of three needs a temporary");
    assert!(temps.iter().all(|d| d.elem == teil::ast::ElemType::F32));
}
