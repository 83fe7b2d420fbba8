//! The suite: the requirement registry and the scenario files, loaded and validated.
//!
//! Both are data. Every file is validated against its JSON Schema in `schemas/` when loaded,
//! and cross-checked (a scenario naming an unknown row, mutant, check or role is an error,
//! never a warning). The suite is embedded in the binary at build time; `--suite DIR` loads a
//! working copy instead, which is how a spec editor tries a new row.

mod error;
mod load;
mod registry;
mod scenario;
mod schema;
mod surfaces;

pub use error::SuiteError;
pub use registry::{Family, Level, Registry, Row};
pub use scenario::{
    Bound, BurstSpec, Check, Condition, EventsRead, FailFirst, FireEffectSeamsSpec, ForeachSpec,
    HostAction, HostActionKind, HttpCall, IgnoringSpec, KillPoint, Matcher, McpServerSpec,
    ProviderScript, ReceiverSpec, ReleaseSpec, RepeatSpec, Scenario, SeamCall, Step, WaitSpec,
};
pub use schema::SchemaSet;
pub use surfaces::{Surface, SurfaceKind, Surfaces, fact_id, field_id, fixture_id, seam_id};

/// Files embedded at build time (`scenarios/**.json`, `schemas/**.json`).
pub mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded_suite.rs"));
}

/// A loaded, validated suite.
#[derive(Debug, Clone)]
pub struct Suite {
    /// The requirement registry.
    pub registry: Registry,
    /// Every scenario, sorted by id.
    pub scenarios: Vec<Scenario>,
    /// The host surfaces scenarios may need (`scenarios/surfaces.json`).
    pub surfaces: Surfaces,
    /// The compiled schemas (scenario, registry, report, seams).
    pub schemas: SchemaSet,
}

impl Suite {
    /// The suite embedded in this build of toolcert.
    pub fn embedded() -> Result<Suite, SuiteError> {
        let files = embedded::FILES
            .iter()
            .map(|(p, c)| (p.to_string(), c.to_string()))
            .collect();
        load::from_files(files)
    }

    /// Load the suite from a checkout: `DIR/scenarios/**.json` and `DIR/schemas/**.json`.
    pub fn from_dir(dir: &std::path::Path) -> Result<Suite, SuiteError> {
        load::from_dir(dir)
    }

    /// The scenario with this id.
    pub fn scenario(&self, id: &str) -> Option<&Scenario> {
        self.scenarios.iter().find(|s| s.id == id)
    }
}
