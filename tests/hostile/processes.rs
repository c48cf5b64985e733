//! Hostile inputs: processes (cases added by the work).
#[allow(unused_imports)] use crate::support::*;
