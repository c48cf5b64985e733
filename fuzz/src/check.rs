//! What a self-checking campaign checks ([`Check`], with what is needed to run a check again on
//! a shrunk program) and how one failed ([`FailedCheck`]); shared by [`crate::campaign`], which
//! runs the checks, and [`crate::repro`], which records a failure in a reproducer.

use crate::isa::Isa;
use crate::laws::Law;
use crate::mutate::Mutation;
use crate::profile::Phase;
use teil::fmt::Style;

/// One check of the campaign, with what is needed to run it again on a shrunk program.
#[derive(Clone, Debug, PartialEq)]
pub enum Check {
    /// The generator produced a program that does not type-check.
    Generator,
    /// The oracle tripped the out-of-bounds witness or failed internally.
    Oracle,
    /// The fast evaluator against the oracle.
    Fast,
    /// Printing in a syntax and parsing again.
    RoundTrip(Style),
    /// The Core-TeIL desugaring, under both evaluators.
    Core,
    /// A chain of law rewrites (chosen from the program seed), under both evaluators.
    Laws(Vec<Law>),
    /// A mutant that must be rejected with exactly `mutation.expected()`.
    IllTyped { mutation: Mutation, choice: usize },
    /// The C backend refused a well-typed program.
    Lower { pad: u64 },
    /// The C backend at padding multiple `pad`, with or without contraction lifting, in exact
    /// or fused multiply-add mode, compiled for `isa`.
    C {
        pad: u64,
        lift: bool,
        fma: bool,
        isa: Isa,
    },
    /// The translation validator (spec/validation.md) rejects the kernel at `pad`.
    Validate { pad: u64 },
}

impl Check {
    /// The phase of a campaign's profile the check's whole run counts in; `None` for checks
    /// whose steps time themselves (lowering, validation, the C compiler and driver).
    pub fn phase(&self) -> Option<Phase> {
        match self {
            Check::Generator => Some(Phase::Generate),
            Check::Oracle => Some(Phase::Oracle),
            Check::Fast => Some(Phase::Fast),
            Check::RoundTrip(_) | Check::Core | Check::Laws(_) => Some(Phase::Variants),
            Check::IllTyped { .. } => Some(Phase::Mutant),
            Check::Lower { .. } | Check::C { .. } | Check::Validate { .. } => None,
        }
    }

    /// What the check compares, for reports.
    pub fn describe(&self) -> String {
        match self {
            Check::Generator => "the generated program is ill-typed".into(),
            Check::Oracle => "the oracle fails on a well-typed program".into(),
            Check::Fast => "the fast evaluator differs from the oracle".into(),
            Check::RoundTrip(s) => format!(
                "printing in the {} syntax and parsing again changes the program",
                style_name(*s)
            ),
            Check::Core => "the Core-TeIL form evaluates differently".into(),
            Check::Laws(laws) if laws.is_empty() => {
                "rewriting by the §3.6 laws gives an ill-typed program".into()
            }
            Check::Laws(laws) => {
                let names: Vec<&str> = laws.iter().map(|l| l.equation()).collect();
                format!(
                    "rewriting by the laws [{}] changes the values",
                    names.join("; ")
                )
            }
            Check::IllTyped { mutation, .. } => format!(
                "the mutant {mutation:?} is not rejected with exactly {}",
                mutation.expected().as_str()
            ),
            Check::Lower { pad } => format!("the C backend cannot lower the program at M = {pad}"),
            Check::C {
                pad,
                fma: true,
                isa,
                ..
            } => format!(
                "the C backend at M = {pad}{} in fma mode differs from the oracle by more than \
                 the bound of spec/values.md",
                for_isa(*isa)
            ),
            Check::C {
                pad,
                lift: true,
                isa,
                ..
            } => {
                format!(
                    "the C backend at M = {pad}{} differs from the oracle",
                    for_isa(*isa)
                )
            }
            Check::C {
                pad,
                lift: false,
                isa,
                ..
            } => format!(
                "the C backend at M = {pad}{} without contraction lifting differs from the oracle",
                for_isa(*isa)
            ),
            Check::Validate { pad } => {
                format!("the translation validator rejects the kernel for M = {pad}")
            }
        }
    }

    /// The check without what varies between programs failing it the same way (the padding
    /// multiple, the chain of laws): the check part of a finding's signature
    /// ([`crate::signature`]).
    pub fn family(&self) -> String {
        match self {
            Check::Generator => "generator".into(),
            Check::Oracle => "oracle".into(),
            Check::Fast => "fast".into(),
            Check::RoundTrip(s) => format!("round-trip {}", style_name(*s)),
            Check::Core => "core".into(),
            Check::Laws(laws) if laws.is_empty() => "laws ill-typed".into(),
            Check::Laws(_) => "laws".into(),
            Check::IllTyped { mutation, .. } => format!("mutant {mutation:?}"),
            Check::Lower { .. } => "lower".into(),
            Check::C { lift, fma, .. } => format!(
                "c{}{}",
                if *lift { " lifted" } else { "" },
                if *fma { " fma" } else { "" }
            ),
            Check::Validate { .. } => "validate".into(),
        }
    }

    /// How many predicate calls shrinking may spend (a C check compiles once per call).
    pub(crate) fn shrink_budget(&self) -> usize {
        match self {
            Check::C { .. } | Check::Lower { .. } => 150,
            Check::Validate { .. } => 500,
            _ => 2000,
        }
    }
}

/// ` for avx512`, say: the kernel target of a C check, unless it is the compiler's default.
fn for_isa(isa: Isa) -> String {
    match isa {
        Isa::Default => String::new(),
        _ => format!(" for {isa}"),
    }
}

fn style_name(s: Style) -> &'static str {
    match s {
        Style::Prefix => "prefix",
        Style::Infix => "infix",
    }
}

/// One failed check.
#[derive(Clone, Debug)]
pub struct FailedCheck {
    pub check: Check,
    pub detail: String,
}
