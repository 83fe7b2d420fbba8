//! One observation struct per step kind (and per double), each defined in its step kind's module
//! (`crate::suite::step`) and re-exported here under the paths observations have always had. Fields
//! holding what the host sent (bodies, events, statuses it chose) stay
//! [`Value`](serde_json::Value)s; optional fields are left out of the JSON when absent, and
//! `Option`s without `skip_serializing_if` are `null` when absent, as the observation document has
//! always had them.

pub use crate::suite::step::burst::BurstObservation;
pub use crate::suite::step::catalog::{CatalogObservation, HiddenToolProbe};
pub use crate::suite::step::discovery::DiscoveryObservation;
pub use crate::suite::step::events::{
    EventsObservation, Pairing, PartialLog, SessionBrackets, Truncation,
};
pub use crate::suite::step::fire_effect_seams::{EffectSeamRow, FireEffectSeamsObservation};
pub use crate::suite::step::foreach::ForeachObservation;
pub use crate::suite::step::host::{KillObservation, RestartObservation};
pub use crate::suite::step::http::{AbandonObservation, HttpObservation};
pub use crate::suite::step::mcp_server::{McpCall, McpList, McpServerObservation};
pub use crate::suite::step::provider::ProviderObservation;
pub use crate::suite::step::receiver::{Arrival, ReceiverObservation};
pub use crate::suite::step::release::ReleaseObservation;
pub use crate::suite::step::seam::{HttpHead, SeamObservation};
pub use crate::suite::step::wait::WaitObservation;
