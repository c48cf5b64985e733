//! The guard front ends on the command line: `teil einsum`, `teil lower`, and `.tin` files read
//! by `teil check`, `teil run` and `teil emit-c` (exit codes, output files, diagnostics).

mod support;

use std::path::{Path, PathBuf};
use support::{stderr, stdout, teil, teil_stdin};

fn tin(name: &str) -> String {
    let p: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/tin")
        .join(name);
    p.to_string_lossy().into_owned()
}

fn program(text: &str) -> teil::CheckedProgram {
    match teil::compile(text) {
        Ok((p, _)) => p,
        Err(d) => panic!("not a TeIL program: {d:?}\n{text}"),
    }
}

#[test]
fn einsum_with_an_extent_of_0_prints_the_result_shape_and_no_program() {
    let o = teil(&["einsum", "ij,jk", "--shapes", "[[2,0],[0,3]]"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "// einsum \"ij,jk\" with shapes [[2, 0], [0, 3]]\n\
         // no TeIL program: operand 0 has an extent of 0 and TeIL tensors have no empty \
         dimensions\n// the result has shape [2, 3] and holds only zeros\n"
    );
    // The other checks still apply: 0 broadcasts against 1 only.
    let o = teil(&["einsum", "i,i->i", "--shapes", "[[0],[3]]"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("E0404"), "{}", stderr(&o));
}

#[test]
fn einsum_prints_the_lowered_program() {
    let o = teil(&["einsum", "ij,jk->ik", "--shapes", "[[2,3],[3,4]]"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).is_empty());
    let text = stdout(&o);
    assert!(
        text.starts_with("// einsum \"ij,jk->ik\" with shapes [[2, 3], [3, 4]]\n"),
        "{text}"
    );
    let (want, _) = teil::guard::einsum("ij,jk->ik", &[[2u64, 3], [3, 4]]).unwrap();
    assert!(program(&text).program().same_as(want.program()));
    // An equation starting with `-` is an equation, not an option.
    let o = teil(&["einsum", "->", "--shapes", "[[]]"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("out = in0"));
    let o = teil(&[
        "einsum", "ij->ji", "--shapes", "[[2,3]]", "--syntax", "infix",
    ]);
    assert!(stdout(&o).contains("out = in0 ^[1 2]"), "{}", stdout(&o));
}

#[test]
fn einsum_writes_the_output_file_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mm.teil");
    let o = teil(&[
        "einsum",
        "ab,bc,cd->ad",
        "--shapes",
        "[[2,3],[3,4],[4,5]]",
        "-o",
        path.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());
    let written = std::fs::read_to_string(&path).unwrap();
    let printed = stdout(&teil(&[
        "einsum",
        "ab,bc,cd->ad",
        "--shapes",
        "[[2,3],[3,4],[4,5]]",
    ]));
    assert_eq!(written, printed);
    // Nothing but the file is left in the directory.
    let entries: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(entries.len(), 1);
    // The written file is an ordinary program.
    let o = teil(&["check", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // A directory that does not exist is an I/O error (exit 2), not a crash.
    let bad = dir.path().join("no/such/dir/x.teil");
    let o = teil(&[
        "einsum",
        "i->i",
        "--shapes",
        "[[2]]",
        "-o",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn einsum_misuse_exits_1_with_a_diagnostic() {
    for (eq, shapes, code, file) in [
        ("ij,jk->ik", "[[2,3],[4,5]]", "E0404", "<equation>"),
        ("ij,jk->ik", "[[2,3]]", "E0402", "<equation>"),
        ("ij->iz", "[[2,3]]", "E0405", "<equation>"),
        ("ij->ii", "[[2,2]]", "E0406", "<equation>"),
        ("i$j", "[[2,3]]", "E0401", "<equation>"),
        ("ij", "[[2,3]", "E0408", "<shapes>"),
    ] {
        let o = teil(&["einsum", eq, "--shapes", shapes]);
        assert_eq!(o.status.code(), Some(1), "{eq} {shapes}");
        assert!(stdout(&o).is_empty(), "{eq}: no program on stdout");
        let err = stderr(&o);
        assert!(
            err.contains(&format!("[{code}] Error")) && err.contains(file),
            "{eq}:\n{err}"
        );
        let o = teil(&["einsum", eq, "--shapes", shapes, "--format", "json"]);
        assert_eq!(o.status.code(), Some(1));
        let line = stdout(&o);
        assert!(
            line.starts_with(&format!("{{\"code\":\"{code}\"")) && line.contains(file),
            "{eq}: {line}"
        );
    }
}

#[test]
fn lower_prints_what_check_run_and_emit_c_use() {
    let o = teil(&["lower", &tin("fig2a.tin")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "input alloc B : [2, 3, 4]\ninput alloc C : [4]\noutput alloc A : [2, 3]\n\
         A = contr 3 4 (prod B C)\n"
    );
    let o = teil(&["lower", &tin("fig2a.tin"), "--syntax", "infix"]);
    assert!(
        stdout(&o).ends_with("A = (B # C) .[3 4]\n"),
        "{}",
        stdout(&o)
    );

    // `teil run` on the .tin file and on its lowering give the same results.
    let dir = tempfile::tempdir().unwrap();
    let lowered = dir.path().join("fig2c.teil");
    let o = teil(&["lower", &tin("fig2c.tin"), "-o", lowered.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let a = teil(&["run", &tin("fig2c.tin"), "--random-inputs", "3"]);
    let b = teil(&["run", lowered.to_str().unwrap(), "--random-inputs", "3"]);
    assert_eq!(a.status.code(), Some(0), "{}", stderr(&a));
    assert_eq!(stdout(&a), stdout(&b));
    assert!(stdout(&a).contains("A : [2, 3]"), "{}", stdout(&a));

    let o = teil(&["emit-c", &tin("fig2a.tin")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("void teil_kernel("));
}

#[test]
fn tin_files_are_checked_with_their_verdicts() {
    let o = teil(&[
        "check",
        &tin("fig2a.tin"),
        &tin("fig2c.tin"),
        &tin("fig4a.tin"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).is_empty());

    let o = teil(&["check", &tin("partial_sum.tin")]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("[W0501] Warning"), "{}", stderr(&o));

    for cmd in ["check", "lower", "run", "emit-c"] {
        let o = teil(&[cmd, &tin("fig3a.tin")]);
        assert_eq!(o.status.code(), Some(1), "{cmd}");
        let err = stderr(&o);
        assert!(err.contains("[E0503] Error: index `k`"), "{cmd}:\n{err}");
        assert!(err.contains("fig3a.tin:8:"), "{cmd}:\n{err}");
    }
}

#[test]
fn lower_reads_standard_input() {
    let o = teil_stdin(
        &["lower", "-"],
        b"alloc A : [2, 3]\nalloc B : [3, 2]\nA(i, j) = B(j, i)\n",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).ends_with("A = transp 1 2 B\n"), "{}", stdout(&o));
}
