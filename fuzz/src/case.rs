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
use crate::shrink::Inputs;
use proptest::strategy::BoxedStrategy;
use std::collections::BTreeMap;
use teil::ast::{BinOp, ExprKind, Program, Qualifier};
use teil::ops::Ops;
use teil::CheckedProgram;

/// Which programs a campaign draws.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Profile {
    /// Every construct (the flavours of the self-checking campaign).
    #[default]
    All,
    /// Programs whose ops/1 form has `einsum` steps only.
    Einsum,
}

impl Profile {
    pub fn name(self) -> &'static str {
        match self {
            Profile::All => "all",
            Profile::Einsum => "einsum",
        }
    }

    pub fn from_name(name: &str) -> Option<Profile> {
        [Profile::All, Profile::Einsum]
            .into_iter()
            .find(|p| p.name() == name)
    }

    /// The flag that selects it, with a leading space (nothing for the default).
    pub fn flag(self) -> &'static str {
        match self {
            Profile::All => "",
            Profile::Einsum => " --profile einsum",
        }
    }
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
}

impl Case {
    /// `Err` when the program does not check, reads an undefined value, or the oracle refuses
    /// it (too large).
    pub fn new(seed: u64, program: Program, inputs: Option<Inputs>) -> Result<Case, NotACase> {
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
        let exact = !has_division(&checked) && compare::small_integers(expected.values());
        Ok(Case {
            seed,
            checked,
            inputs,
            expected,
            ops,
            exact,
        })
    }
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
    pub fn case(&mut self, profile: Profile, seed: u64, index: u64) -> Option<Case> {
        let base = program_seed(seed, index);
        let strategy =
            self.strategies
                .entry((profile, index % 4))
                .or_insert_with(|| match profile {
                    Profile::All => gen::program(flavour(index)),
                    Profile::Einsum => gen::program(gen::GenConfig {
                        einsum_only: true,
                        ..flavour(index)
                    }),
                });
        let attempts = match profile {
            Profile::All => 1,
            Profile::Einsum => EINSUM_ATTEMPTS,
        };
        (0..attempts).find_map(|a| {
            let seed = if a == 0 { base } else { program_seed(base, a) };
            let (p, _) = campaign::generate(strategy, seed);
            let case = Case::new(seed, supply(p), None).ok()?;
            (profile == Profile::All || case.ops.einsum_only()).then_some(case)
        })
    }
}
