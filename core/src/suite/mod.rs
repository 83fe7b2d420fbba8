//! The suite: the requirement registry and the scenario files, loaded and validated.
//!
//! Both are data. Every file is validated against its JSON Schema in `schemas/` when loaded,
//! and cross-checked (a scenario naming an unknown row, mutant, check or role is an error,
//! never a warning). The suite is embedded in the binary at build time; `--suite DIR` loads a
//! working copy instead, which is how a spec editor tries a new row.
//!
//! Data mutants (`scenarios/mutants/`, [`mutant`]) are known bugs written as data, which the
//! mutation matrix proves like the reference host's own.
//!
//! A scenario file may use fragments (`scenarios/fragments/`) and declare
//! `params`; both are expanded at load, before validation, so what runs is the
//! written-out scenario.
//!
//! This module is the data model; the loader (the crate's private `loader` module, above
//! [`crate::expect`] and [`crate::observation`], which it validates checks against) builds a
//! [`Suite`] through [`Suite::embedded`] and [`Suite::from_dir`].

mod error;
pub mod matcher;
pub mod mutant;
mod registry;
mod scenario;
mod schema;
pub mod step;
pub(crate) mod surfaces;

pub use error::SuiteError;
pub use matcher::{
    Bound, Condition, DaysSpec, EachSpec, IgnoringSpec, Matcher, SameSetSpec, Shape,
};
pub use mutant::{DataMutant, EventsEdit, ResponseEdit, Rewrite, SetValue};
pub use registry::{Basis, Family, Level, Profile, Registry, Row};
pub use scenario::{Check, Evidence, ONLY_WHERE_UNWITNESSABLE, Scenario};
pub use schema::SchemaSet;
pub use step::Step;
pub use step::burst::BurstSpec;
pub use step::catalog::CatalogSpec;
pub use step::discovery::DiscoveryProbe;
pub use step::events::EventsRead;
pub use step::fire_effect_seams::FireEffectSeamsSpec;
pub use step::foreach::ForeachSpec;
pub use step::host::{HostAction, HostActionKind};
pub use step::http::{AbandonPoint, HttpCall};
pub use step::mcp_server::{McpAnswer, McpServerSpec};
pub use step::provider::ProviderScript;
pub use step::receiver::{FailFirst, ReceiverSpec};
pub use step::release::ReleaseSpec;
pub use step::repeat::RepeatSpec;
pub use step::seam::{SeamCall, SeamMethod};
pub use step::wait::{KillPoint, WaitSpec};
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
    /// Per data file (`scenarios/**.json`: the registry, the surfaces and every scenario):
    /// `sha256:` and the hex SHA-256 of its RFC 8785 form. Schemas are left out: they shape
    /// files, not verdicts.
    pub file_digests: std::collections::BTreeMap<String, String>,
    /// Every scenario as the loader validated it, by id: `params` and fragment uses
    /// expanded (`toolcert suite --expanded` prints these).
    pub expanded: std::collections::BTreeMap<String, serde_json::Value>,
    /// The suite's data mutants (`scenarios/mutants/<name>.json`), by name: known bugs written
    /// as rewrites of the reference host's answers, which the mutation matrix proves like the
    /// reference host's own mutants.
    pub data_mutants: std::collections::BTreeMap<String, DataMutant>,
}

impl Suite {
    /// The suite's digest: `sha256:` and the hex SHA-256 of the RFC 8785 form of
    /// [`Suite::file_digests`], so two suites with the same rules and scenarios agree whatever
    /// their formatting (certification bundles record it).
    pub fn digest(&self) -> String {
        let map: serde_json::Map<String, serde_json::Value> = self
            .file_digests
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect();
        format!(
            "sha256:{}",
            toolcert_base::canonical::jcs_sha256_hex(&serde_json::Value::Object(map))
        )
    }

    /// The scenario with this id.
    pub fn scenario(&self, id: &str) -> Option<&Scenario> {
        self.scenarios.iter().find(|s| s.id == id)
    }
}
