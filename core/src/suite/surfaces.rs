//! Host surfaces (`scenarios/surfaces.json`): everything a scenario needs from a host beyond
//! the OpenWOP API itself, and whose it is.
//!
//! A surface is an upstream seam (with the request fields the upstream contract defines), one
//! of toolcert's own extensions (a seam, or an extra field on an upstream seam, written up in
//! `docs/reference/host-extensions.md`), a fixture workflow (upstream, or toolcert's own shipped in
//! `fixtures/`), a fact the host profile states, or a harness ability (`--spawn`). Scenarios
//! declare the surfaces they use; the loader checks the declaration against what the steps
//! really use, and at run time a surface the host lacks makes the checks that need it
//! `blocked` with the surface's `provide` text, never `fail`.

use serde::{Deserialize, Serialize};

/// Whose a surface is, and what kind of thing it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SurfaceKind {
    /// A seam the OpenWOP seam documents define (`fields` lists its request members).
    UpstreamSeam,
    /// A seam only toolcert defines (`docs/reference/host-extensions.md`).
    ExtensionSeam,
    /// A request member toolcert adds to an upstream seam.
    ExtensionField,
    /// A fixture workflow of the upstream conformance catalog.
    UpstreamFixture,
    /// A fixture workflow toolcert ships in `fixtures/` for hosts to seed.
    ToolcertFixture,
    /// A value the host profile states (`facts`), because no discovery field carries it.
    ProfileFact,
    /// Something toolcert itself must be able to do to the host (start it, kill it).
    Harness,
}

impl SurfaceKind {
    /// Whether the surface is toolcert's own, not part of the upstream contract.
    pub fn is_extension(self) -> bool {
        matches!(
            self,
            SurfaceKind::ExtensionSeam | SurfaceKind::ExtensionField | SurfaceKind::ToolcertFixture
        )
    }

    /// A short name for reasons: "upstream seam", "toolcert extension field", ….
    pub fn describe(self) -> &'static str {
        match self {
            SurfaceKind::UpstreamSeam => "upstream seam",
            SurfaceKind::ExtensionSeam => "toolcert extension seam",
            SurfaceKind::ExtensionField => "toolcert extension field",
            SurfaceKind::UpstreamFixture => "upstream fixture",
            SurfaceKind::ToolcertFixture => "toolcert fixture",
            SurfaceKind::ProfileFact => "host profile fact",
            SurfaceKind::Harness => "harness ability",
        }
    }
}

/// One surface.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Surface {
    /// `seam:<path>`, `field:<seam path>.<member>`, `fixture:<id>`, `fact:<name>` or `spawn`.
    pub id: String,
    /// Whose it is.
    pub kind: SurfaceKind,
    /// What it is, in a few words.
    pub title: String,
    /// How a host (or its operator) provides it: printed in every `blocked` reason it causes.
    pub provide: String,
    /// For an upstream seam: the request members the upstream contract defines.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<String>,
}

/// The surfaces file.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Surfaces {
    /// `$schema` reference (for editors).
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Every surface, by id.
    pub surfaces: Vec<Surface>,
}

impl Surfaces {
    /// The surface with this id.
    pub fn get(&self, id: &str) -> Option<&Surface> {
        self.surfaces.iter().find(|s| s.id == id)
    }

    /// The surface of a seam (`toolhooks/invoke` ⇒ `seam:toolhooks/invoke`).
    pub fn seam(&self, seam: &str) -> Option<&Surface> {
        self.get(&format!("seam:{seam}"))
    }

    /// A reason naming a surface and how to provide it.
    pub fn reason(&self, id: &str) -> String {
        match self.get(id) {
            Some(s) => format!("{} {} ({}): {}", s.kind.describe(), id, s.title, s.provide),
            None => id.to_string(),
        }
    }
}

/// The surface id of a seam path.
pub fn seam_id(seam: &str) -> String {
    format!("seam:{seam}")
}

/// The surface id of an extension member of a seam request.
pub fn field_id(seam: &str, member: &str) -> String {
    format!("field:{seam}.{member}")
}

/// The surface id of a fixture.
pub fn fixture_id(fixture: &str) -> String {
    format!("fixture:{fixture}")
}

/// The surface id of a profile fact.
pub fn fact_id(fact: &str) -> String {
    format!("fact:{fact}")
}

/// The surface id of the harness's ability to start, kill and restart the host.
pub const SPAWN: &str = "spawn";
