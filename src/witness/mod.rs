//! Doubles toolcert owns. Effects are counted here, never taken from a host's self-report.

mod receiver;

pub use receiver::{Arrival, Endpoint, Receiver};
