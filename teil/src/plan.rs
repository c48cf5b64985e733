//! The contraction planner: in which order a sum of products `Σ_summed Π factors` is
//! contracted pairwise, and the one cost model that decides it.
//!
//! Three consumers ask it: the guards' lowering (`crate::guard`), which writes the order into
//! the TeIL program it emits; the fast evaluator (`teil_interp::fast`), which materialises
//! each pairwise result; and the C backend's contraction lifting (`teil_cbackend::opt::lift`),
//! which turns a plan into loop nests over temporaries. Each describes its region as a
//! [`Problem`] over dense label numbers and states what it optimises as an [`Objective`]:
//!
//! - [`Objective::Work`]: the fewest loop iterations (or operations, [`Count`]) of all the
//!   pairwise nests. Exhaustive dynamic programming over subsets for up to [`EXHAUSTIVE`]
//!   factors, the greedy pairing below above that. The lowering and the C backend use it: both
//!   produce loop nests whose cost is exactly this.
//! - [`Objective::Memory`]: the smallest intermediate first, then the fewest iterations,
//!   greedily (opt_einsum's greedy strategy). The fast evaluator uses it because it allocates
//!   every intermediate under a memory budget, so the size of what it allocates is what it
//!   must keep small.
//!
//! Every plan is correct: a plan only reorders a finite sum of products, which over the reals
//! changes nothing; with rounding, the consumers document the reassociation
//! (spec/interpreter.md).
//!
//! A label is *needed* by a group of factors when the result keeps it or a factor outside the
//! group carries it; a group sums every other label of its factors as soon as it is formed
//! (a factor alone sums the labels only it carries before any product).

/// Problems with at most this many factors are planned exhaustively under
/// [`Objective::Work`] (3^10 / 2 pairs of subsets, well under a millisecond).
pub const EXHAUSTIVE: usize = 10;

/// A set of dense label numbers, as a bit set.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct LabelSet(Vec<u64>);

impl LabelSet {
    pub fn new() -> Self {
        LabelSet(Vec::new())
    }

    pub fn insert(&mut self, l: usize) {
        let (w, b) = (l / 64, l % 64);
        if self.0.len() <= w {
            self.0.resize(w + 1, 0);
        }
        self.0[w] |= 1 << b;
    }

    pub fn contains(&self, l: usize) -> bool {
        self.0.get(l / 64).is_some_and(|w| w >> (l % 64) & 1 == 1)
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    /// The labels in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0
            .iter()
            .enumerate()
            .flat_map(|(w, &word)| bits(word).map(move |b| w * 64 + b))
    }

    fn zip(&self, other: &LabelSet, f: impl Fn(u64, u64) -> u64) -> LabelSet {
        let n = self.0.len().max(other.0.len());
        let word = |s: &LabelSet, i: usize| s.0.get(i).copied().unwrap_or(0);
        let mut words: Vec<u64> = (0..n).map(|i| f(word(self, i), word(other, i))).collect();
        // No trailing empty words: equal sets are equal vectors.
        while words.last() == Some(&0) {
            words.pop();
        }
        LabelSet(words)
    }

    pub fn union(&self, other: &LabelSet) -> LabelSet {
        self.zip(other, |a, b| a | b)
    }

    pub fn intersection(&self, other: &LabelSet) -> LabelSet {
        self.zip(other, |a, b| a & b)
    }

    pub fn difference(&self, other: &LabelSet) -> LabelSet {
        self.zip(other, |a, b| a & !b)
    }
}

/// The set bits of `word`, lowest first.
fn bits(mut word: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (word != 0).then(|| {
            let b = word.trailing_zeros() as usize;
            word &= word - 1;
            b
        })
    })
}

impl FromIterator<usize> for LabelSet {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        let mut s = LabelSet::new();
        for l in iter {
            s.insert(l);
        }
        s
    }
}

/// What a pairwise nest costs per iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Count {
    /// One per iteration.
    Iterations,
    /// Floating-point operations: a multiplication and an addition per iteration of a pairwise
    /// contraction; `n - 1` multiplications and an addition in an `n`-factor nest.
    Operations,
}

/// What a plan minimises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Objective {
    /// The total cost of the pairwise nests (exhaustively for up to [`EXHAUSTIVE`] factors).
    Work(Count),
    /// The size of each next intermediate, then its nest's iterations (greedy).
    Memory,
}

/// A contraction order: a binary tree over the factors. Every node keeps the labels it needs
/// and has summed the rest of its factors' labels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Factor `factor`, summed over the labels only it carries.
    Leaf { factor: usize, keep: LabelSet },
    /// The product of two groups, summed over the labels neither the result nor a factor
    /// outside the group needs. Its nest runs over `left.keep() ∪ right.keep()`.
    Merge {
        left: Box<Plan>,
        right: Box<Plan>,
        keep: LabelSet,
    },
}

impl Plan {
    /// The labels this node's result carries.
    pub fn keep(&self) -> &LabelSet {
        match self {
            Plan::Leaf { keep, .. } | Plan::Merge { keep, .. } => keep,
        }
    }
}

/// A sum-of-products region over labels `0..extents.len()`.
#[derive(Clone, Debug)]
pub struct Problem {
    /// The extent of each label.
    pub extents: Vec<u64>,
    /// The labels each factor carries (a label on several axes of one factor counts once).
    pub factors: Vec<LabelSet>,
    /// The labels the result keeps.
    pub free: LabelSet,
    /// Summed labels no factor carries: each multiplies the work of the last nest by its
    /// extent.
    pub dangling: LabelSet,
}

impl Problem {
    /// `Π extents` over `labels`, as a float (costs compare products that may exceed `u64`).
    pub fn size(&self, labels: &LabelSet) -> f64 {
        labels.iter().map(|l| self.extents[l] as f64).product()
    }

    /// `Π extents` over `a ∪ b`, without building the union.
    fn size_of_union(&self, a: &LabelSet, b: &LabelSet) -> f64 {
        let n = a.0.len().max(b.0.len());
        let mut p = 1.0;
        for w in 0..n {
            let word = a.0.get(w).copied().unwrap_or(0) | b.0.get(w).copied().unwrap_or(0);
            for bit in bits(word) {
                p *= self.extents[w * 64 + bit] as f64;
            }
        }
        p
    }

    /// The cheapest order under `objective`; `None` without factors.
    pub fn plan(&self, objective: Objective) -> Option<Plan> {
        match (self.factors.len(), objective) {
            (0, _) => None,
            (n, Objective::Work(count)) if n <= EXHAUSTIVE => Some(self.exhaustive(count)),
            _ => Some(self.greedy(objective)),
        }
    }

    /// The cost of `plan` under [`Objective::Work`]: the iterations (or operations) of every
    /// nest it runs, the summing nests of leaves included.
    pub fn cost(&self, plan: &Plan, count: Count) -> f64 {
        self.cost_below(plan, count, true)
    }

    fn cost_below(&self, plan: &Plan, count: Count, root: bool) -> f64 {
        match plan {
            Plan::Leaf { factor, keep } => self.leaf_cost(&self.factors[*factor], keep),
            Plan::Merge { left, right, .. } => {
                self.cost_below(left, count, false)
                    + self.cost_below(right, count, false)
                    + self.merge_cost(left.keep(), right.keep(), count, root)
            }
        }
    }

    /// The cost of one nest over every label of the region, the alternative to any plan: it
    /// multiplies all factors in each iteration.
    pub fn fused_cost(&self, count: Count) -> f64 {
        let all = self
            .factors
            .iter()
            .fold(self.free.union(&self.dangling), |m, f| m.union(f));
        let per_iteration = match count {
            Count::Iterations => 1.0,
            Count::Operations => self.factors.len() as f64,
        };
        self.size(&all) * per_iteration
    }

    fn leaf_cost(&self, labels: &LabelSet, keep: &LabelSet) -> f64 {
        if labels == keep {
            0.0
        } else {
            self.size(labels)
        }
    }

    fn merge_cost(&self, a: &LabelSet, b: &LabelSet, count: Count, root: bool) -> f64 {
        let per_iteration = match count {
            Count::Iterations => 1.0,
            Count::Operations => 2.0,
        };
        let loops = self.size_of_union(a, b) * per_iteration;
        if root {
            loops * self.size(&self.dangling)
        } else {
            loops
        }
    }

    /// The labels of the factors in the bit mask `group` that the group needs.
    fn need(&self, group: u64) -> LabelSet {
        let (mut inside, mut outside) = (LabelSet::new(), self.free.clone());
        for (k, f) in self.factors.iter().enumerate() {
            if group >> k & 1 == 1 {
                inside = inside.union(f);
            } else {
                outside = outside.union(f);
            }
        }
        inside.intersection(&outside)
    }

    /// The cheapest plan under [`Objective::Work`], by dynamic programming over subsets.
    /// Ties go to the first split found, counting the smaller half down from the largest.
    fn exhaustive(&self, count: Count) -> Plan {
        let n = self.factors.len();
        let full = (1u64 << n) - 1;
        let need: Vec<LabelSet> = (0..=full).map(|s| self.need(s)).collect();
        let mut best = vec![0.0f64; need.len()];
        let mut choice = vec![0u64; need.len()];
        for s in 1..=full {
            if s.count_ones() == 1 {
                let k = s.trailing_zeros() as usize;
                best[s as usize] = self.leaf_cost(&self.factors[k], &need[s as usize]);
                continue;
            }
            let root = s == full;
            let (mut b, mut c) = (f64::INFINITY, 0);
            let mut sub = (s - 1) & s;
            while sub > 0 {
                let other = s ^ sub;
                if sub < other {
                    let cost = best[sub as usize]
                        + best[other as usize]
                        + self.merge_cost(&need[sub as usize], &need[other as usize], count, root);
                    if cost < b {
                        (b, c) = (cost, sub);
                    }
                }
                sub = (sub - 1) & s;
            }
            best[s as usize] = b;
            choice[s as usize] = c;
        }
        fn build(s: u64, choice: &[u64], need: &[LabelSet]) -> Plan {
            let keep = need[s as usize].clone();
            if s.count_ones() == 1 {
                return Plan::Leaf {
                    factor: s.trailing_zeros() as usize,
                    keep,
                };
            }
            let c = choice[s as usize];
            Plan::Merge {
                left: Box::new(build(c, choice, need)),
                right: Box::new(build(s ^ c, choice, need)),
                keep,
            }
        }
        build(full, &choice, &need)
    }

    /// Greedy pairing: repeatedly merge the pair of groups with the smallest key (the nest's
    /// cost under `Work`; the result's size, then the nest's iterations, under `Memory`). Ties
    /// go to the first pair in group order; a merged group moves to the end.
    fn greedy(&self, objective: Objective) -> Plan {
        // How many groups carry each label.
        let mut carriers = vec![0usize; self.extents.len()];
        let mut groups: Vec<Plan> = Vec::with_capacity(self.factors.len());
        for f in &self.factors {
            for l in f.iter() {
                carriers[l] += 1;
            }
        }
        for (k, f) in self.factors.iter().enumerate() {
            let keep: LabelSet = f
                .iter()
                .filter(|&l| self.free.contains(l) || carriers[l] > 1)
                .collect();
            groups.push(Plan::Leaf { factor: k, keep });
        }
        // Carriers among the groups from now on: a leaf carries what it keeps.
        carriers.fill(0);
        for g in &groups {
            for l in g.keep().iter() {
                carriers[l] += 1;
            }
        }
        while groups.len() > 1 {
            let mut best: Option<((f64, f64), usize, usize)> = None;
            for i in 0..groups.len() {
                for j in i + 1..groups.len() {
                    let (a, b) = (groups[i].keep(), groups[j].keep());
                    let key = match objective {
                        Objective::Work(count) => (self.merge_cost(a, b, count, false), 0.0),
                        Objective::Memory => {
                            let size = self.size(&self.merged_keep(a, b, &carriers));
                            (size, self.size_of_union(a, b))
                        }
                    };
                    if best.as_ref().is_none_or(|(k, ..)| key < *k) {
                        best = Some((key, i, j));
                    }
                }
            }
            let Some((_, i, j)) = best else { break };
            let right = groups.remove(j);
            let left = groups.remove(i);
            let keep = self.merged_keep(left.keep(), right.keep(), &carriers);
            for l in left.keep().iter().chain(right.keep().iter()) {
                carriers[l] -= 1;
            }
            for l in keep.iter() {
                carriers[l] += 1;
            }
            groups.push(Plan::Merge {
                left: Box::new(left),
                right: Box::new(right),
                keep,
            });
        }
        groups.pop().expect("a problem with factors")
    }

    /// What the merge of two groups keeps: their labels that the result keeps or a third group
    /// carries.
    fn merged_keep(&self, a: &LabelSet, b: &LabelSet, carriers: &[usize]) -> LabelSet {
        a.union(b)
            .iter()
            .filter(|&l| {
                let here = usize::from(a.contains(l)) + usize::from(b.contains(l));
                self.free.contains(l) || carriers[l] > here
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(labels: &[usize]) -> LabelSet {
        labels.iter().copied().collect()
    }

    /// `v[i] = Σ_j Σ_k A[i,j] B[j,k] u[k]` with i < 3, j < 4, k < 5 (labels 0, 1, 2).
    fn chain() -> Problem {
        Problem {
            extents: vec![3, 4, 5],
            factors: vec![set(&[0, 1]), set(&[1, 2]), set(&[2])],
            free: set(&[0]),
            dangling: LabelSet::new(),
        }
    }

    /// The shape of a plan as text: factors by number, merges in brackets.
    fn shape(p: &Plan) -> String {
        match p {
            Plan::Leaf { factor, .. } => factor.to_string(),
            Plan::Merge { left, right, .. } => format!("({} {})", shape(left), shape(right)),
        }
    }

    #[test]
    fn a_matrix_chain_times_a_vector_multiplies_the_vector_first() {
        let r = chain();
        for (count, per) in [(Count::Iterations, 1.0), (Count::Operations, 2.0)] {
            for plan in [
                r.exhaustive(count),
                r.greedy(Objective::Work(count)),
                r.greedy(Objective::Memory),
            ] {
                assert_eq!(shape(&plan), "(0 (1 2))");
                // B u: j x k iterations, then A t: i x j.
                assert_eq!(r.cost(&plan, count), (4.0 * 5.0 + 3.0 * 4.0) * per);
                assert_eq!(plan.keep(), &set(&[0]));
            }
            // (A B) u runs i x j x k, then i x k: dearer.
            let ab_first = Plan::Merge {
                left: Box::new(Plan::Merge {
                    left: Box::new(Plan::Leaf {
                        factor: 0,
                        keep: set(&[0, 1]),
                    }),
                    right: Box::new(Plan::Leaf {
                        factor: 1,
                        keep: set(&[1, 2]),
                    }),
                    keep: set(&[0, 2]),
                }),
                right: Box::new(Plan::Leaf {
                    factor: 2,
                    keep: set(&[2]),
                }),
                keep: set(&[0]),
            };
            assert_eq!(r.cost(&ab_first, count), (60.0 + 15.0) * per);
            assert_eq!(
                r.fused_cost(count),
                60.0 * if per == 1.0 { 1.0 } else { 3.0 }
            );
        }
    }

    #[test]
    fn a_label_only_one_factor_carries_is_summed_by_the_leaf() {
        // Σ_j Σ_k A[i,j,k] u[j]: k is A's alone.
        let r = Problem {
            extents: vec![3, 4, 5],
            factors: vec![set(&[0, 1, 2]), set(&[1])],
            free: set(&[0]),
            dangling: LabelSet::new(),
        };
        for objective in [Objective::Work(Count::Iterations), Objective::Memory] {
            let plan = r.plan(objective).expect("two factors");
            let Plan::Merge { left, .. } = &plan else {
                panic!("a merge: {plan:?}")
            };
            assert_eq!(left.keep(), &set(&[0, 1]));
            assert_eq!(r.cost(&plan, Count::Iterations), 60.0 + 12.0);
        }
    }

    #[test]
    fn memory_merges_the_smallest_result_first() {
        // x[a] y[b] z[a,b,c] w[c], everything summed: x y is a 2 x 3 outer product, the
        // smallest result; then z w (2 x 3, summing c = 50) and the two results.
        let r = Problem {
            extents: vec![2, 3, 50],
            factors: vec![set(&[0]), set(&[1]), set(&[0, 1, 2]), set(&[2])],
            free: LabelSet::new(),
            dangling: LabelSet::new(),
        };
        let memory = r.plan(Objective::Memory).expect("plan");
        assert_eq!(shape(&memory), "((0 1) (2 3))");
        assert_eq!(r.cost(&memory, Count::Iterations), 6.0 + 300.0 + 6.0);
        let work = r.plan(Objective::Work(Count::Iterations)).expect("plan");
        assert!(r.cost(&work, Count::Iterations) <= r.cost(&memory, Count::Iterations));
    }

    #[test]
    fn many_factors_are_planned_greedily() {
        // A ring of 12 matrices (above EXHAUSTIVE, so greedy) is still planned, and every
        // label is summed exactly once: the root keeps nothing.
        let n = 12;
        let r = Problem {
            extents: (0..n).map(|k| 2 + k as u64).collect(),
            factors: (0..n).map(|k| set(&[k, (k + 1) % n])).collect(),
            free: LabelSet::new(),
            dangling: LabelSet::new(),
        };
        let plan = r.plan(Objective::Work(Count::Iterations)).expect("plan");
        assert!(plan.keep().is_empty());
        assert!(r.cost(&plan, Count::Iterations) < r.fused_cost(Count::Iterations));
    }

    #[test]
    fn label_sets_grow_past_one_word() {
        let s = set(&[3, 64, 200]);
        assert!(s.contains(200) && s.contains(64) && !s.contains(65));
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![3, 64, 200]);
        assert_eq!(
            s.difference(&set(&[64])).iter().collect::<Vec<_>>(),
            vec![3, 200]
        );
        assert_eq!(set(&[1]).union(&set(&[130])), set(&[1, 130]));
        assert!(LabelSet::new().is_empty() && set(&[5]).intersection(&set(&[6])).is_empty());
    }
}
