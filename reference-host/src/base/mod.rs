//! Layer 0, the foundation: plain data and helpers every layer may use
//! (the mutant switch, configuration, clocks, principals, event and tool
//! event shapes, hashing, schemas, redaction). Nothing here imports a layer
//! above.

pub mod args_hash;
pub mod args_schema;
pub mod clock;
pub mod config;
pub mod content_trust;
pub mod event_codes;
pub mod events;
pub mod ids;
pub mod mac_key;
pub mod mutant;
pub mod principals;
pub mod redaction;
pub mod tool_events;
