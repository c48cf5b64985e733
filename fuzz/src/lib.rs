//! Random TeIL programs and differential fuzzing (issue 5 builds the campaigns on top).
//!
//! [`gen`] produces well-typed programs from shapes, as a proptest strategy that shrinks, or
//! deterministically from a seed with [`gen::sample`]. [`mutate`] breaks exactly one typing
//! rule of a well-typed program, for testing the checker's diagnostics.

pub mod gen;
pub mod mutate;
pub mod shrink;
