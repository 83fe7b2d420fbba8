//! toolcert's integration tests, one test binary: each file under `tests/` is a module here.
//! Every one of them links reqwest, rustls and (through the reference host) axum and SQLite,
//! so some 23 binaries cost minutes of linking and most of the target directory; one binary
//! links once. Modules that drive the embedded reference host need the default `reference`
//! feature. Run one module with `cargo test --test integration <module>::` (a filter, like
//! any test name).
//!
//! The modules share one process: a test must not change process-wide state (environment,
//! current directory, signal dispositions) that another could read.

// libtest starts tests in the order of their names. The mutation matrix is by far the longest
// test (some 90 s on 2 cores): as `mutation_matrix::…` it started about halfway through and
// ran last, alone; under a name that sorts first it runs beside all the others.
#[cfg(feature = "reference")]
#[path = "mutation_matrix.rs"]
mod a_mutation_matrix;

// Helpers the modules share.
mod hostile;
mod support {
    pub mod everything;
    pub mod peers;
    pub mod rows;
    pub mod scratch;
    pub mod tree;
}

#[cfg(feature = "reference")]
mod a2a_real;
#[cfg(feature = "reference")]
mod cli;
mod crash_restart;
#[cfg(feature = "reference")]
mod data_mutants;
mod docs;
mod endless_events;
mod gate;
mod hostile_hosts;
#[cfg(feature = "reference")]
mod hostile_inputs;
mod html_report;
#[cfg(feature = "reference")]
mod layer1_load;
mod mcp_double;
mod mcp_guard;
mod mcp_guard_real;
mod mcp_real;
#[cfg(feature = "reference")]
mod mcp_sdk_client;
mod mcp_vectors;
#[cfg(feature = "reference")]
mod profiles;
mod stranger_host;
#[cfg(feature = "reference")]
mod tls;
#[cfg(feature = "reference")]
mod upstream_only;
#[cfg(feature = "reference")]
mod verdict_agreement;
mod vocabulary;
