//! Feature unification only; see Cargo.toml. No code.
