//! The mock provider's integration tests, one test binary: each file under `tests/` is a module
//! here. Run one module with `cargo test -p mock-provider --test integration <module>::`.

mod common;

mod anthropic;
mod control;
mod openai;
