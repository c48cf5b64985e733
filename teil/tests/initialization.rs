//! The initialisation analysis the checker records in `CheckedProgram` (report §5): where each
//! variable is first read and first assigned, which variables are read before they are written,
//! which stay unassigned, and the warnings and required inputs derived from it.

use teil::check::VarInit;
use teil::Code;

/// `(name, first read: (statement, text read), first write, read before written)`.
type Row = (String, Option<(usize, String)>, Option<usize>, bool);

/// A [`Row`] for every declaration of `src`, which must check.
fn analysis(src: &str) -> Vec<Row> {
    let (p, _) = teil::compile(src).expect("well-typed");
    let init: Vec<&VarInit> = p.initialization().iter().collect();
    assert_eq!(init.len(), p.program().decls.len());
    p.program()
        .decls
        .iter()
        .zip(init)
        .map(|(d, v)| {
            assert_eq!(p.var_init(&d.name.name), Some(v));
            (
                d.name.name.clone(),
                v.first_read
                    .as_ref()
                    .map(|(s, span)| (*s, src[span.clone()].to_string())),
                v.first_write,
                v.read_before_written(),
            )
        })
        .collect()
}

#[test]
fn first_reads_and_writes() {
    let src = "alloc A : [2]\nalloc B : [2]\nalloc T : [2]\nalloc U : [2]\n\
               T = A\nA = add A B\nB = T\n";
    assert_eq!(
        analysis(src),
        [
            // Read by statement 0, assigned by statement 1: its initial value is observable.
            ("A".to_string(), Some((0, "A".to_string())), Some(1), true),
            // Read (statement 1) before its assignment (statement 2).
            ("B".to_string(), Some((1, "B".to_string())), Some(2), true),
            // Assigned (statement 0) before it is read (statement 2).
            ("T".to_string(), Some((2, "T".to_string())), Some(0), false),
            // Neither read nor assigned.
            ("U".to_string(), None, None, false),
        ]
    );
    // A statement reads its right-hand side before it assigns: `A = add A A` reads A first.
    let src = "alloc A : [2]\nA = add A A\n";
    assert_eq!(
        analysis(src),
        [("A".to_string(), Some((0, "A".to_string())), Some(0), true)]
    );
}

/// The derived answers: required inputs of an unqualified program, and the warnings of a
/// qualified one (W0001 at the first read, W0003 at the declaration).
#[test]
fn required_inputs_and_warnings_follow_the_analysis() {
    let (p, warnings) =
        teil::compile("alloc A : [2]\nalloc B : [2]\nalloc C : [2]\nB = A\nC = add B A\n")
            .expect("well-typed");
    assert!(warnings.is_empty());
    let required: Vec<&str> = p
        .program()
        .decls
        .iter()
        .filter(|d| p.is_required(d))
        .map(|d| d.name.name.as_str())
        .collect();
    assert_eq!(required, ["A"]);
    let src = "input alloc A : [2]\nalloc T : [2]\noutput alloc B : [2]\noutput alloc C : [2]\n\
               B = add A T\nT = A\n";
    let (p, warnings) = teil::compile(src).expect("warnings only");
    let found: Vec<(Code, &str)> = warnings
        .iter()
        .map(|d| (d.code, &src[d.primary.span.clone()]))
        .collect();
    assert_eq!(
        found,
        // In source order: C's declaration, then the read of T.
        [
            (Code::OutputNeverAssigned, "C"),
            (Code::UninitializedRead, "T"),
        ]
    );
    let c = p.var_init("C").expect("declared");
    assert!(!c.written() && c.first_read.is_none());
    let t = p.var_init("T").expect("declared");
    assert_eq!((t.read_before_written(), t.first_write), (true, Some(1)));
}
