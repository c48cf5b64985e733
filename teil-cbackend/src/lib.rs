//! TeIL padding-aware C backend. See issue 4.
