//! The cases of campaigns against other implementations (`teil fuzz --target`, `--export`):
//! which programs a profile draws ([`Generators`]), and a program made ready to be sent or
//! exported ([`Case`]: its inputs, the oracle's outputs, its ops/1 form). Shared by
//! [`crate::target_campaign`] and [`crate::export`].
//!
//! Programs never read undefined values: a generated program that would (an in-place rewrite
//! reading an output before it is assigned) has the variable supplied instead ([`supply`]).

use crate::campaign::{self, flavour, program_seed, Store};
use crate::compare;
use crate::error::NotACase;
use crate::gen;
use crate::hazard::{self, Hazards};
use crate::shrink::Inputs;
use proptest::strategy::BoxedStrategy;
use std::collections::BTreeMap;
use teil::ast::{BinOp, ElemType, ExprKind, Program, Qualifier};
use teil::ops::Ops;
use teil::CheckedProgram;
use teil_interp::rounding::Permit;

/// Which programs a campaign draws.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Profile {
    /// Every construct (the flavours of the self-checking campaign).
    #[default]
    All,
    /// Programs whose ops/1 form has `einsum` steps only.
    Einsum,
    /// What compilers transform ([`compiler_flavour`]), with special values in the inputs of
    /// every other program ([`special_inputs`]).
    Compiler,
}

impl Profile {
    pub const ALL: [Profile; 3] = [Profile::All, Profile::Einsum, Profile::Compiler];

    pub fn name(self) -> &'static str {
        match self {
            Profile::All => "all",
            Profile::Einsum => "einsum",
            Profile::Compiler => "compiler",
        }
    }

    pub fn from_name(name: &str) -> Option<Profile> {
        Profile::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The flag that selects it, with a leading space (nothing for the default).
    pub fn flag(self) -> &'static str {
        match self {
            Profile::All => "",
            Profile::Einsum => " --profile einsum",
            Profile::Compiler => " --profile compiler",
        }
    }
}

/// The generator settings of program `index` of the compiler profile (spec/fuzzing.md,
/// "Programs that exercise compilers"): [`gen::GenConfig::compiler`], the functions and
/// binary32 for half the programs always, intermediates up
/// to rank 6, and by `index mod 4`: 0 plain (declared ranks up to 3, depth 4, 4 statements);
/// 1 the same with division; 2 declared ranks up to 6 with extents 1–2, depth 3; 3 deep
/// (depth 5, 1024 elements per intermediate, every variable a parameter).
pub fn compiler_flavour(index: u64) -> gen::GenConfig {
    let base = gen::GenConfig {
        compiler: true,
        max_inner_rank: 6,
        max_elements: 729,
        max_stmts: 4,
        functions: true,
        binary32: true,
        ..gen::GenConfig::default()
    };
    match index % 4 {
        0 => base,
        1 => gen::GenConfig {
            division: true,
            ..base
        },
        2 => gen::GenConfig {
            max_rank: 6,
            max_extent: 2,
            max_depth: 3,
            ..base
        },
        _ => gen::GenConfig {
            max_depth: 5,
            max_elements: 1024,
            qualifiers: false,
            ..base
        },
    }
}

/// The special values of the compiler profile's inputs.
pub const SPECIAL_VALUES: [f64; 5] = [0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN];
/// One input cell in this many is a special value, in the programs that have them.
pub const SPECIAL_ONE_IN: u64 = 8;

/// Whether program `index` of the compiler profile has special values in its inputs: the odd
/// ones.
pub fn has_special_inputs(profile: Profile, index: u64) -> bool {
    profile == Profile::Compiler && index % 2 == 1
}

/// The functions' edges in binary32, each drawn with either sign (spec/fuzzing.md, "Special
/// values"): `exp`'s overflow threshold and the binary32 value above it, where its results
/// become subnormal, its last nonzero result and the value below it; where `tanh` and `erf`
/// round to 1; a subnormal, the smallest subnormal and the largest finite value. Every one is a
/// binary32 value.
pub const EDGES_F32: [f64; 10] = [
    88.72283172607422,
    88.72283935546875,
    -87.3365478515625,
    -103.97207641601562,
    -103.97208404541016,
    9.020000457763672,
    3.9200000762939453,
    9.99994610111476e-41,
    1.401298464324817e-45,
    3.4028234663852886e38,
];
/// [`EDGES_F32`] in binary64: `exp` finite at 709.782712893384 and `∞` at the next value,
/// subnormal below -708.3964185322641, `5e-324` at -745.1332191019411 and 0 at the next value.
pub const EDGES_F64: [f64; 10] = [
    709.782712893384,
    709.7827128933841,
    -708.3964185322641,
    -745.1332191019411,
    -745.1332191019412,
    19.1,
    5.93,
    1e-310,
    5e-324,
    f64::MAX,
];

/// `inputs` (the small integers of [`teil_interp::random_inputs`]) with one cell in
/// [`SPECIAL_ONE_IN`], drawn with `seed`, replaced by one of [`SPECIAL_VALUES`]. Only values
/// whose class (NaN, +∞, −∞, finite) no reassociation of a sum or product can change: with
/// small integers and their quotients no finite partial sum or product overflows or underflows,
/// so a target that sums or multiplies in another order still gets the oracle's class in every
/// cell, and the comparisons of spec/fuzzing.md stay sound (spec/fuzzing.md, "Special
/// values"; subnormals and large magnitudes are not drawn, for that reason).
///
/// With `permitted` (a program judged by its permits, [`new_vocabulary`], whose per-cell bounds
/// cover every reordering's overflow, underflow and cancellation), half the replaced cells get
/// one of the functions' edges in the variable's declared type instead ([`EDGES_F32`],
/// [`EDGES_F64`]), with either sign.
pub fn special_inputs(mut inputs: Inputs, seed: u64, permitted: Option<&CheckedProgram>) -> Inputs {
    let mut rng = teil_interp::random::SplitMix64(seed ^ 0x7370_6563_6961_6c73);
    let pick = |of: &[f64], rng: &mut teil_interp::random::SplitMix64| {
        of[(rng.next_u64() % of.len() as u64) as usize]
    };
    for (name, t) in inputs.iter_mut() {
        let edges = permitted.map(|p| match p.decl(name).map(|d| d.elem) {
            Some(ElemType::F32) => &EDGES_F32[..],
            _ => &EDGES_F64[..],
        });
        for x in t.iter_mut() {
            if rng.next_u64() % SPECIAL_ONE_IN == 0 {
                *x = match edges {
                    Some(edges) if rng.next_u64() % 2 == 0 => {
                        let sign = if rng.next_u64() % 2 == 0 { 1.0 } else { -1.0 };
                        sign * pick(edges, &mut rng)
                    }
                    _ => pick(&SPECIAL_VALUES, &mut rng),
                };
            }
        }
    }
    inputs
}

/// How many seeds the einsum profile tries for one program before skipping it.
const EINSUM_ATTEMPTS: u64 = 64;

/// One program ready to be sent: the checked program, its inputs, the oracle's value of every
/// output, its ops/1 form, and whether the comparison is exact.
#[derive(Clone, Debug)]
pub struct Case {
    pub seed: u64,
    pub checked: CheckedProgram,
    pub inputs: Inputs,
    pub expected: Store,
    pub ops: Ops,
    /// Exact when the program has no division and every output is an integer below 2^50
    /// (spec/fuzzing.md); within the bound otherwise.
    pub exact: bool,
    /// Output cells not judged: a correct target may compute them otherwise ([`hazard`]).
    pub hazards: Hazards,
    /// For a program with functions or binary32 values, what a target may compute in each
    /// output cell ([`teil_interp::rounding::permitted`], function results within
    /// [`FUNCTION_ULPS`]), in place of [`Case::exact`]'s tolerance (spec/fuzzing.md, "Judging
    /// functions").
    pub permits: Option<Permits>,
}

/// What a target may compute in each cell of each output.
pub type Permits = BTreeMap<String, ndarray::ArrayD<Permit>>;

/// The ulps a target's function result may be from the correctly rounded value by default
/// (`teil fuzz --function-ulps`; spec/fuzzing.md, "Judging functions"): NumPy's float32 `exp`,
/// `log` and `tanh` are documented within 4 ulps (and measured within 2-3, PERFORMANCE.md).
pub const FUNCTION_ULPS: f64 = 4.0;

/// The largest allowance `--function-ulps` takes (2^20 ulps: a relative error of 1/16 in
/// binary32).
pub const MAX_FUNCTION_ULPS: f64 = 1_048_576.0;

impl Case {
    /// `Err` when the program does not check, reads an undefined value, or the oracle refuses
    /// it (too large).
    /// Function results may be `ulps` ulps from the correctly rounded values
    /// ([`Case::permits`]).
    pub fn new(
        seed: u64,
        program: Program,
        inputs: Option<Inputs>,
        ulps: f64,
    ) -> Result<Case, NotACase> {
        let (checked, _) = teil::check(program).map_err(|_| NotACase::DoesNotCheck)?;
        let inputs = inputs.unwrap_or_else(|| teil_interp::random_inputs(&checked, seed));
        let ops = teil::ops::lower(&checked);
        if let Some(n) = ops.undefined.first() {
            return Err(NotACase::ReadsUndefined(n.clone()));
        }
        if let Some((n, _)) = ops.inputs.iter().find(|(n, _)| !inputs.contains_key(n)) {
            return Err(NotACase::NoInput(n.clone()));
        }
        let all = teil_interp::run_oracle(&checked, &inputs).map_err(NotACase::Oracle)?;
        let expected: Store = ops
            .outputs
            .iter()
            .filter_map(|(n, _)| all.get(n).map(|t| (n.clone(), t.clone())))
            .collect();
        let division = has_division(&checked);
        let exact = !division && compare::small_integers(expected.values());
        let infinite = inputs.values().flatten().any(|x| x.is_infinite());
        let hazards = if division || infinite {
            hazard::hazards(&ops, &inputs)
        } else {
            Hazards::new()
        };
        let permits = match new_vocabulary(&checked) {
            true => {
                let all = teil_interp::rounding::permitted(&checked, &inputs, ulps)
                    .map_err(NotACase::Oracle)?;
                Some(
                    all.into_iter()
                        .filter(|(n, _)| expected.contains_key(n))
                        .collect(),
                )
            }
            false => None,
        };
        Ok(Case {
            seed,
            checked,
            inputs,
            expected,
            ops,
            exact: exact && permits.is_none(),
            hazards,
            permits,
        })
    }
}

/// What a program has beyond `+ - * /` and the tensor operations in binary64.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Vocabulary {
    /// A variable declared `f32`.
    pub binary32: bool,
    /// A function (`exp`, ..., `max`, `min`) or a conversion (`f32 e`, `f64 e`).
    pub functions: bool,
}

impl Vocabulary {
    pub fn of(p: &CheckedProgram) -> Vocabulary {
        let mut functions = false;
        for s in &p.program().stmts {
            s.value.walk(&mut |e| {
                functions |= matches!(
                    e.kind,
                    ExprKind::Func(..) | ExprKind::Func2(..) | ExprKind::Convert(..)
                )
            });
        }
        Vocabulary {
            binary32: p.program().decls.iter().any(|d| d.elem != ElemType::F64),
            functions,
        }
    }
}

/// Whether `p` has a function, a conversion or a binary32 variable: the cases judged by
/// [`Case::permits`]. Programs of `+ - * /` in binary64 keep the comparisons they had
/// (spec/fuzzing.md, "Comparisons").
pub fn new_vocabulary(p: &CheckedProgram) -> bool {
    Vocabulary::of(p) != Vocabulary::default()
}

fn has_division(p: &CheckedProgram) -> bool {
    let mut found = false;
    for s in &p.program().stmts {
        s.value
            .walk(&mut |e| found |= matches!(e.kind, ExprKind::Binary(BinOp::Div, ..)));
    }
    found
}

/// `p` with every variable it reads before defining it made a parameter the caller supplies
/// (`output` becomes `inout`, an unqualified variable `input`).
pub fn supply(p: Program) -> Program {
    let Ok((checked, _)) = teil::check(p.clone()) else {
        return p;
    };
    let undefined = teil::ops::lower(&checked).undefined;
    let mut p = p;
    for d in p
        .decls
        .iter_mut()
        .filter(|d| undefined.contains(&d.name.name))
    {
        d.qualifier = match d.qualifier {
            Some(Qualifier::Output) | Some(Qualifier::InOut) => Some(Qualifier::InOut),
            _ => Some(Qualifier::Input),
        };
    }
    p
}

/// The generators of both profiles, built once per flavour.
#[derive(Default)]
pub struct Generators {
    strategies: BTreeMap<(Profile, u64), BoxedStrategy<Program>>,
}

impl Generators {
    /// Program `index` of the campaign with seed `seed`: for `all`, the self-checking
    /// campaign's program ([`campaign::generate`]); for `einsum`, the first of up to
    /// `EINSUM_ATTEMPTS` (64) seeds whose einsum-only program lowers to `einsum` steps only. Then
    /// [`supply`]. `None` when no case results (see [`Case::new`]).
    pub fn case(&mut self, profile: Profile, seed: u64, index: u64, ulps: f64) -> Option<Case> {
        let base = program_seed(seed, index);
        let strategy = self
            .strategies
            .entry((profile, index % 4))
            .or_insert_with(|| {
                let cfg = match profile {
                    Profile::All => flavour(index),
                    Profile::Einsum => gen::GenConfig {
                        einsum_only: true,
                        ..flavour(index)
                    },
                    Profile::Compiler => compiler_flavour(index),
                };
                gen::program(cfg)
            });
        let attempts = match profile {
            Profile::All | Profile::Compiler => 1,
            Profile::Einsum => EINSUM_ATTEMPTS,
        };
        (0..attempts).find_map(|a| {
            let seed = if a == 0 { base } else { program_seed(base, a) };
            let (p, _) = campaign::generate(strategy, seed);
            let p = supply(p);
            let inputs = has_special_inputs(profile, index).then(|| {
                let checked = teil::check(p.clone()).ok()?.0;
                let permitted = new_vocabulary(&checked).then_some(&checked);
                Some(special_inputs(
                    teil_interp::random_inputs(&checked, seed),
                    seed,
                    permitted,
                ))
            });
            let case = Case::new(seed, p, inputs.flatten(), ulps).ok()?;
            (profile != Profile::Einsum || case.ops.einsum_only()).then_some(case)
        })
    }
}
