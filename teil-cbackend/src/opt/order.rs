//! The contraction-order planner of contraction lifting ([`crate::opt::lift`]): a
//! sum-of-products region as bit masks ([`Region`]), the cost of a plan (loop iterations, or
//! operations with `Tuning::order`), and the cheapest plan ([`Region::plan`]: exhaustive
//! dynamic programming over subsets for up to 10 factors, greedy pairing above).

use crate::ir::Label;

/// A contraction order: which factors are multiplied (and summed) together first.
#[derive(Debug)]
pub(crate) enum Plan {
    Leaf(usize),
    /// The group of factors in the mask, made from two smaller groups.
    Merge(u64, Box<Plan>, Box<Plan>),
}

impl Plan {
    pub(crate) fn mask(&self) -> u64 {
        match self {
            Plan::Leaf(k) => 1u64 << k,
            Plan::Merge(m, ..) => *m,
        }
    }
}

/// A sum-of-products region `Σ_{summed} Π factors` as label bit masks over `labels`.
pub(crate) struct Region {
    pub labels: Vec<Label>,
    pub extents: Vec<u64>,
    /// Labels of each factor.
    pub lab: Vec<u128>,
    /// The region's free labels (bound outside it).
    pub fmask: u128,
    /// Summed labels no factor uses (each multiplies the result by its extent).
    pub dangling: u128,
    pub full: u64,
    /// Operations per iteration of a pairwise contraction: 1 counts iterations (issue 4's
    /// model), 2 counts a multiplication and an addition (`Tuning::order`).
    pub merge_ops: f64,
}

impl Region {
    fn lab_of(&self, s: u64) -> u128 {
        (0..self.lab.len())
            .filter(|k| s >> k & 1 == 1)
            .fold(0, |m, k| m | self.lab[k])
    }

    /// The labels a group must keep: those used outside it.
    pub(crate) fn need(&self, s: u64) -> u128 {
        self.lab_of(s) & (self.fmask | self.lab_of(self.full & !s))
    }

    pub(crate) fn prod(&self, m: u128) -> f64 {
        (0..self.extents.len())
            .filter(|b| m >> b & 1 == 1)
            .map(|b| self.extents[b] as f64)
            .product()
    }

    pub(crate) fn labels_of(&self, m: u128) -> Vec<Label> {
        (0..self.labels.len())
            .filter(|b| m >> b & 1 == 1)
            .map(|b| self.labels[b])
            .collect()
    }

    /// The dimension order of a temporary of a lifted plan holding the labels `keep`
    /// (`Tuning::order`): label order, except that the region's last free label (the statement
    /// target's innermost dimension), if the temporary has it, is innermost. The kernels that
    /// compute and read the temporary then run along the target's innermost dimension, as the
    /// statement's own nest does.
    pub(crate) fn layout(&self, keep: u128) -> Vec<Label> {
        let mut labels = self.labels_of(keep);
        let last = self.labels_of(self.fmask).pop();
        if let Some(p) = labels.iter().position(|&l| Some(l) == last) {
            let l = labels.remove(p);
            labels.push(l);
        }
        labels
    }

    fn single(&self, k: usize) -> f64 {
        if self.lab[k] & !self.need(1u64 << k) == 0 {
            0.0
        } else {
            self.prod(self.lab[k])
        }
    }

    fn merge(&self, a: u64, b: u64, root: bool) -> f64 {
        let loops = self.prod(self.need(a) | self.need(b)) * self.merge_ops;
        if root {
            loops * self.prod(self.dangling)
        } else {
            loops
        }
    }

    /// Iterations of all loop nests the plan produces.
    pub(crate) fn cost(&self, p: &Plan, root: bool) -> f64 {
        match p {
            Plan::Leaf(k) => self.single(*k),
            Plan::Merge(_, a, b) => {
                self.cost(a, false) + self.cost(b, false) + self.merge(a.mask(), b.mask(), root)
            }
        }
    }

    /// The plan lifting uses: [`Region::dp`] for up to 10 factors, [`Region::greedy`] above.
    pub(crate) fn plan(&self) -> Plan {
        if self.lab.len() <= 10 {
            self.dp()
        } else {
            self.greedy()
        }
    }

    /// The cheapest plan, by dynamic programming over subsets (few factors).
    fn dp(&self) -> Plan {
        let n = self.lab.len();
        let size = 1usize << n;
        let mut best = vec![0.0f64; size];
        let mut choice = vec![0u64; size];
        for s in 1..size as u64 {
            if s.count_ones() == 1 {
                best[s as usize] = self.single(s.trailing_zeros() as usize);
                continue;
            }
            let root = s == self.full;
            let mut b = f64::INFINITY;
            let mut c = 0;
            let mut sub = (s - 1) & s;
            while sub > 0 {
                let other = s ^ sub;
                if sub < other {
                    let cost =
                        best[sub as usize] + best[other as usize] + self.merge(sub, other, root);
                    if cost < b {
                        b = cost;
                        c = sub;
                    }
                }
                sub = (sub - 1) & s;
            }
            best[s as usize] = b;
            choice[s as usize] = c;
        }
        fn plan(s: u64, choice: &[u64]) -> Plan {
            if s.count_ones() == 1 {
                return Plan::Leaf(s.trailing_zeros() as usize);
            }
            let c = choice[s as usize];
            Plan::Merge(s, Box::new(plan(c, choice)), Box::new(plan(s ^ c, choice)))
        }
        plan(self.full, &choice)
    }

    /// A good plan for many factors: repeatedly contract the pair with the smallest loop nest.
    fn greedy(&self) -> Plan {
        let mut groups: Vec<Plan> = (0..self.lab.len()).map(Plan::Leaf).collect();
        while groups.len() > 2 {
            let mut best = (f64::INFINITY, 0, 1);
            for i in 0..groups.len() {
                for j in i + 1..groups.len() {
                    let c = self.merge(groups[i].mask(), groups[j].mask(), false);
                    if c < best.0 {
                        best = (c, i, j);
                    }
                }
            }
            let (_, i, j) = best;
            let b = groups.remove(j);
            let a = groups.remove(i);
            groups.push(Plan::Merge(a.mask() | b.mask(), Box::new(a), Box::new(b)));
        }
        let b = groups.pop();
        let a = groups.pop();
        match (a, b) {
            (Some(a), Some(b)) => Plan::Merge(self.full, Box::new(a), Box::new(b)),
            (None, Some(b)) | (Some(b), None) => b,
            (None, None) => Plan::Leaf(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `v[i] = Σ_j Σ_k A[i,j] B[j,k] u[k]` with i < 3, j < 4, k < 5 (labels l0, l1, l2).
    fn chain(merge_ops: f64) -> Region {
        Region {
            labels: vec![Label(0), Label(1), Label(2)],
            extents: vec![3, 4, 5],
            lab: vec![0b011, 0b110, 0b100],
            fmask: 0b001,
            dangling: 0,
            full: 0b111,
            merge_ops,
        }
    }

    #[test]
    fn a_matrix_chain_times_a_vector_multiplies_the_vector_first() {
        for merge_ops in [1.0, 2.0] {
            let r = chain(merge_ops);
            for plan in [r.dp(), r.greedy(), r.plan()] {
                assert_eq!(
                    format!("{plan:?}"),
                    "Merge(7, Leaf(0), Merge(6, Leaf(1), Leaf(2)))"
                );
                // B u: j x k iterations, then A t: i x j.
                assert_eq!(r.cost(&plan, true), (4.0 * 5.0 + 3.0 * 4.0) * merge_ops);
            }
            // The other orders cost more: (A B) u runs i x j x k, then i x k.
            let ab_first = Plan::Merge(
                7,
                Box::new(Plan::Merge(
                    3,
                    Box::new(Plan::Leaf(0)),
                    Box::new(Plan::Leaf(1)),
                )),
                Box::new(Plan::Leaf(2)),
            );
            assert_eq!(r.cost(&ab_first, true), (60.0 + 15.0) * merge_ops);
        }
    }

    #[test]
    fn a_label_only_one_factor_reads_is_summed_before_the_merge() {
        // Σ_j Σ_k A[i,j,k] u[j]: k is A's alone, so A is summed over k first.
        let r = Region {
            labels: vec![Label(0), Label(1), Label(2)],
            extents: vec![3, 4, 5],
            lab: vec![0b111, 0b010],
            fmask: 0b001,
            dangling: 0,
            full: 0b11,
            merge_ops: 1.0,
        };
        assert_eq!(r.need(0b01), 0b011);
        let plan = r.plan();
        assert_eq!(format!("{plan:?}"), "Merge(3, Leaf(0), Leaf(1))");
        assert_eq!(r.cost(&plan, true), 60.0 + 12.0);
    }

    #[test]
    fn temporaries_keep_the_targets_innermost_label_innermost() {
        let mut r = chain(2.0);
        r.fmask = 0b011;
        assert_eq!(r.labels_of(0b111), vec![Label(0), Label(1), Label(2)]);
        assert_eq!(r.layout(0b111), vec![Label(0), Label(2), Label(1)]);
        assert_eq!(r.layout(0b101), vec![Label(0), Label(2)]);
    }
}
