//! Random TeIL programs and differential fuzzing.
//!
//! [`gen`] produces well-typed programs from shapes, as a proptest strategy that shrinks, or
//! deterministically from a seed with [`gen::sample`]. [`mutate`] breaks exactly one typing
//! rule of a well-typed program, for testing the checker's diagnostics. [`shrink`] reduces a
//! failing program and its inputs. [`laws`] rewrites programs by the TeIL paper's equational
//! laws. [`campaign`] runs whole differential campaigns (`teil fuzz`) of the checks of
//! [`check`], comparing with the tolerances of [`compare`], compiling for the kernel targets of
//! [`isa`] in turn and writing reproducers with [`repro`]; [`forms`] gives the
//! programs that reach the C backend's kernel forms, and [`signature`] tells the same bug found
//! twice in the JSON [`summary`] of a campaign (`teil fuzz --summary-json`).
//!
//! Against other implementations ([`hazard`] marks the output cells a correct target may
//! compute otherwise): [`target`] speaks the `teil-target/1` protocol with a target
//! process, [`target_campaign`] runs campaigns against it (shrinking with the same [`shrink`]) on
//! the programs of [`case`] (counting what it sent with [`constructs`]),
//! [`export`] writes test vectors, and [`ops_eval`] is a reference evaluator of the ops/1 form
//! (`teil::ops`) with planted bugs, for tests.
//!
//! [`error`] holds every error of the crate as data and is the one place that words them.

pub mod accuracy;
pub mod campaign;
pub mod case;
pub mod check;
pub mod compare;
pub mod constructs;
pub mod error;
pub mod export;
pub mod forms;
pub mod gen;
pub mod hazard;
pub mod inplace;
pub mod isa;
pub mod laws;
pub mod mutate;
pub mod ops_eval;
pub mod profile;
pub mod repro;
pub mod shrink;
pub mod signature;
pub mod summary;
pub mod target;
pub mod target_campaign;
