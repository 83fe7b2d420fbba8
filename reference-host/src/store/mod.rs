//! Layer 1, the store: the SQLite run and event store. It knows no domain
//! module; the schemas of the modules keeping tables in it are handed in
//! ([`crate::surface::app::STORE_SCHEMAS`]).

pub mod storage;
