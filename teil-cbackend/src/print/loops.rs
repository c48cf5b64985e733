//! The loops of a contraction step's variant: their C names ([`Fresh`]) and the loops over
//! its free labels, the first one parallel with OpenMP.

use super::writer::Writer;
use crate::ir::{Bound, Contraction, Kernel, Label};
use std::collections::BTreeMap;

/// The C names of one printed variant's loop variables, `i0`, `i1`, ... in order of
/// appearance.
#[derive(Default)]
pub(super) struct Fresh(usize);

impl Fresh {
    pub(super) fn name(&mut self) -> String {
        self.0 += 1;
        format!("i{}", self.0 - 1)
    }
}

/// A loop over every target label of `c` but those in `skip`, outermost first, the first one
/// parallel with OpenMP, around `body`. The body gets the loops' C names and whether the
/// OpenMP pragma is still to be placed (every label was skipped).
pub(super) fn within_loops(
    k: &Kernel,
    c: &Contraction,
    skip: &[Label],
    w: &mut Writer,
    fresh: &mut Fresh,
    body: impl FnOnce(&mut Writer, &mut Fresh, BTreeMap<Label, String>, bool),
) {
    let free: Vec<&Bound> = c.free.iter().filter(|f| !skip.contains(&f.var)).collect();
    loops(&free, BTreeMap::new(), k.openmp, w, fresh, body);
}

/// Loops over `free`, outermost first, the first one parallel with OpenMP where `pragma`,
/// around `body`, which gets the loops' C names added to `names` and whether the pragma is
/// still to be placed (`free` is empty).
pub(super) fn loops(
    free: &[&Bound],
    mut names: BTreeMap<Label, String>,
    pragma: bool,
    w: &mut Writer,
    fresh: &mut Fresh,
    body: impl FnOnce(&mut Writer, &mut Fresh, BTreeMap<Label, String>, bool),
) {
    let Some((f, rest)) = free.split_first() else {
        return body(w, fresh, names, pragma);
    };
    if pragma {
        w.directive("#pragma omp parallel for");
    }
    let name = fresh.name();
    let header = header(&name, f.extent);
    names.insert(f.var, name);
    w.block(header, |w| loops(rest, names, false, w, fresh, body));
}

/// The header of the loop of the C variable `name` over `0..n`.
fn header(name: &str, n: u64) -> String {
    format!("for (long long {name} = 0; {name} < {n}; {name}++)")
}

/// Loops over `named`, outermost first, each a C variable already named and its extent,
/// around `body`: the loops a dot-product step runs inside its lane's blocks
/// (`Strategy::Dot::inner`), whose variables the block's offsets already use.
pub(super) fn named_loops(w: &mut Writer, named: &[(String, u64)], body: &dyn Fn(&mut Writer)) {
    match named.split_first() {
        None => body(w),
        Some(((name, n), rest)) => w.block(header(name, *n), |w| named_loops(w, rest, body)),
    }
}

/// Names the loops of the `inner` labels of `c` (`Strategy::Dot::inner`), in the order of
/// its free labels, adding them to `names`: the loops for [`named_loops`].
pub(super) fn name_inner(
    c: &Contraction,
    inner: &[Label],
    names: &mut BTreeMap<Label, String>,
    fresh: &mut Fresh,
) -> Vec<(String, u64)> {
    c.free
        .iter()
        .filter(|f| inner.contains(&f.var))
        .map(|f| {
            let name = fresh.name();
            names.insert(f.var, name.clone());
            (name, f.extent)
        })
        .collect()
}
