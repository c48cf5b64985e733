//! Random TeIL programs and differential fuzzing.
//!
//! [`gen`] produces well-typed programs from shapes, as a proptest strategy that shrinks, or
//! deterministically from a seed with [`gen::sample`]. [`mutate`] breaks exactly one typing
//! rule of a well-typed program, for testing the checker's diagnostics. [`shrink`] reduces a
//! failing program and its inputs. [`laws`] rewrites programs by the TeIL paper's equational
//! laws. [`campaign`] runs whole differential campaigns (`teil fuzz`), comparing with the
//! tolerances of [`compare`] and writing reproducers with [`repro`].

pub mod campaign;
pub mod compare;
pub mod gen;
pub mod inplace;
pub mod laws;
pub mod mutate;
pub mod repro;
pub mod shrink;
