//! Loading: parse strictly, validate against schemas, deserialize, cross-check references.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use super::expand::{self, Expanded};
use super::fragment::Fragments;
use crate::expect::reads::{self, Reads};
use crate::observation::fields as observation_fields;
use crate::suite::surfaces::{self, SurfaceKind, Surfaces};
use crate::suite::{Registry, Scenario, SchemaSet, Step, Suite, SuiteError};
use toolcert_base::canonical::parse_strict;

pub(crate) const REGISTRY_FILE: &str = "scenarios/requirements.json";
pub(crate) const REGISTRY_SCHEMA: &str = "schemas/requirements.schema.json";
pub(crate) const SCENARIO_SCHEMA: &str = "schemas/scenario.schema.json";
pub(crate) const SURFACES_FILE: &str = "scenarios/surfaces.json";
pub(crate) const SURFACES_SCHEMA: &str = "schemas/surfaces.schema.json";

/// Load from `DIR/scenarios` and `DIR/schemas`.
pub(crate) fn from_dir(dir: &Path) -> Result<Suite, SuiteError> {
    let mut files = Vec::new();
    for sub in ["scenarios", "schemas"] {
        walk(&dir.join(sub), dir, &mut files)?;
    }
    if files.is_empty() {
        return Err(SuiteError::Missing(format!(
            "scenarios/ or schemas/ under {} (pass the root of a toolcert checkout to --suite)",
            dir.display()
        )));
    }
    from_files(files)
}

fn walk(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) -> Result<(), SuiteError> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    let mut paths: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            walk(&path, root, out)?;
        } else if path.extension().is_some_and(|e| e == "json") {
            let rel = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .to_string_lossy()
                .replace('\\', "/");
            let text = crate::input::read_to_string(&path, crate::input::MAX_SUITE_FILE_BYTES)
                .map_err(|source| SuiteError::Io {
                    file: rel.clone(),
                    source,
                })?;
            out.push((rel, text));
        }
    }
    Ok(())
}

/// Parse a suite file strictly; a scenario file's keyed `checks` are read in file order
/// ([`super::keyed`]).
fn parse(file: &str, text: &str) -> Result<Value, SuiteError> {
    let parsed = if file.starts_with("scenarios/") {
        super::keyed::parse_scenario(text)
    } else {
        parse_strict(text)
    };
    parsed.map_err(|e| SuiteError::Json {
        file: file.to_string(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })
}

fn reference(file: &str, pointer: String, message: String) -> SuiteError {
    SuiteError::Reference {
        file: file.to_string(),
        pointer,
        message,
    }
}

/// The embedded suite with one more file (or a file replaced): how the loader's tests show
/// what a single scenario or fragment does to a load.
#[cfg(test)]
pub(crate) fn embedded_with_file(file: &str, text: &str) -> Result<Suite, SuiteError> {
    let mut files: Vec<(String, String)> = crate::suite::embedded::FILES
        .iter()
        .map(|(p, c)| (p.to_string(), c.to_string()))
        .collect();
    files.push((file.to_string(), text.to_string()));
    from_files(files)
}

/// Load from (relative path, contents) pairs.
pub(crate) fn from_files(files: Vec<(String, String)>) -> Result<Suite, SuiteError> {
    let mut schemas = SchemaSet::default();
    let mut data = BTreeMap::new();
    let mut file_digests = BTreeMap::new();
    for (path, text) in files {
        let value = parse(&path, &text)?;
        if path.starts_with("schemas/") {
            schemas.insert(&path, &value)?;
        } else {
            // Canonical form: a reformatted file is the same suite, an edited rule is not;
            // nor is a file restating what the loader derives.
            file_digests.insert(
                path.clone(),
                format!(
                    "sha256:{}",
                    toolcert_base::canonical::jcs_sha256_hex(&super::derived::digest_form(
                        &path, &value
                    ))
                ),
            );
            data.insert(path, value);
        }
    }
    let registry_value = data
        .remove(REGISTRY_FILE)
        .ok_or_else(|| SuiteError::Missing(REGISTRY_FILE.into()))?;
    schemas.validate(REGISTRY_SCHEMA, REGISTRY_FILE, &registry_value)?;
    let registry: Registry = serde_json::from_value(registry_value).map_err(|e| {
        reference(
            REGISTRY_FILE,
            String::new(),
            format!("does not deserialize: {e}"),
        )
    })?;
    check_registry(&registry)?;
    let surfaces_value = data
        .remove(SURFACES_FILE)
        .ok_or_else(|| SuiteError::Missing(SURFACES_FILE.into()))?;
    schemas.validate(SURFACES_SCHEMA, SURFACES_FILE, &surfaces_value)?;
    let surfaces: Surfaces = serde_json::from_value(surfaces_value).map_err(|e| {
        reference(
            SURFACES_FILE,
            String::new(),
            format!("does not deserialize: {e}"),
        )
    })?;
    check_surfaces(&surfaces)?;

    // `kills` names are the reference host's mutants: the `toolcert` binary's
    // `matrix::check_kills` checks them, so the suite itself loads without the reference host
    // built in.
    let fragments = Fragments::take(&mut data, &schemas)?;
    let data_mutants = super::mutants::take(&mut data, &schemas)?;
    let mut scenarios: Vec<Scenario> = Vec::new();
    let mut expanded_docs = BTreeMap::new();
    let documents = data
        .into_iter()
        .map(|(file, doc)| expand::scenario_file(&file, doc, &fragments))
        .collect::<Result<Vec<_>, _>>()?;
    for Expanded { label: file, value } in documents.into_iter().flatten() {
        schemas.validate(SCENARIO_SCHEMA, &file, &value)?;
        let mut expanded_value = value.clone();
        let states_surfaces = value.get("surfaces").is_some();
        let mut scenario: Scenario = serde_json::from_value(value)
            .map_err(|e| reference(&file, String::new(), format!("does not deserialize: {e}")))?;
        scenario.file = file.clone();
        check_scenario(&scenario, &registry)?;
        scenario.surfaces = check_scenario_surfaces(&scenario, states_surfaces, &surfaces)?;
        expanded_value["surfaces"] = serde_json::json!(scenario.surfaces);
        check_reads(&scenario)?;
        check_controls(&scenario, &registry)?;
        check_tentative_requirements(&scenario, &registry)?;
        if let Some(other) = scenarios.iter().find(|s| s.id == scenario.id) {
            return Err(reference(
                &file,
                "/id".into(),
                format!(
                    "scenario id \"{}\" is already used by {}",
                    scenario.id, other.file
                ),
            ));
        }
        expanded_docs.insert(scenario.id.clone(), expanded_value);
        scenarios.push(scenario);
    }
    scenarios.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(Suite {
        registry,
        scenarios,
        schemas,
        surfaces,
        file_digests,
        expanded: expanded_docs,
        data_mutants,
    })
}

fn check_surfaces(surfaces: &Surfaces) -> Result<(), SuiteError> {
    let mut seen = BTreeSet::new();
    for (i, s) in surfaces.surfaces.iter().enumerate() {
        if !seen.insert(s.id.as_str()) {
            return Err(reference(
                SURFACES_FILE,
                format!("/surfaces/{i}/id"),
                format!("surface id \"{}\" appears twice", s.id),
            ));
        }
        let prefix_ok = match s.kind {
            SurfaceKind::UpstreamSeam | SurfaceKind::ExtensionSeam => s.id.starts_with("seam:"),
            SurfaceKind::ExtensionField => s.id.starts_with("field:"),
            SurfaceKind::UpstreamFixture | SurfaceKind::ToolcertFixture => {
                s.id.starts_with("fixture:")
            }
            SurfaceKind::ProfileFact => s.id.starts_with("fact:"),
            SurfaceKind::Harness => s.id == surfaces::SPAWN,
        };
        if !prefix_ok {
            return Err(reference(
                SURFACES_FILE,
                format!("/surfaces/{i}/id"),
                format!(
                    "surface \"{}\" of kind {:?} must be named seam:…, field:…, fixture:…, fact:… or spawn as its kind says",
                    s.id, s.kind
                ),
            ));
        }
        if s.kind == SurfaceKind::ExtensionField {
            let seam =
                s.id.strip_prefix("field:")
                    .and_then(|f| f.rsplit_once('.'))
                    .map(|(seam, _)| seam);
            let upstream = seam
                .and_then(|seam| surfaces.seam(seam))
                .is_some_and(|p| p.kind == SurfaceKind::UpstreamSeam);
            if !upstream {
                return Err(reference(
                    SURFACES_FILE,
                    format!("/surfaces/{i}/id"),
                    format!(
                        "extension field \"{}\" must extend an upstream seam listed here (field:<seam>.<member>)",
                        s.id
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The surfaces a scenario's steps really use: its seams, the members it adds to upstream
/// seams, the fixtures and profile facts its templates name, and `spawn` for `host` steps.
pub(crate) fn used_surfaces(s: &Scenario, surfaces: &Surfaces) -> Result<BTreeSet<String>, String> {
    let mut used = BTreeSet::new();
    let mut seam_call = |seam: &str, body: &Value| -> Result<(), String> {
        let Some(surface) = surfaces.seam(seam) else {
            return Err(format!(
                "seam \"{seam}\" is not a surface in {SURFACES_FILE}; add it (upstream-seam with its fields, or extension-seam)"
            ));
        };
        used.insert(surface.id.clone());
        if surface.kind == SurfaceKind::UpstreamSeam
            && let Some(map) = body.as_object()
        {
            for member in map.keys() {
                if !surface.fields.iter().any(|f| f == member) {
                    used.insert(surfaces::field_id(seam, member));
                }
            }
        }
        Ok(())
    };
    for step in &s.steps {
        match step {
            Step::Seam(c) => seam_call(&c.seam, &c.body)?,
            Step::Foreach(f) => seam_call(&f.call.seam, &f.call.body)?,
            Step::Repeat(r) => seam_call(&r.call.seam, &r.call.body)?,
            Step::FireEffectSeams(_) => seam_call("effect-seams/fire", &Value::Null)?,
            _ => {}
        }
    }
    if s.steps.iter().any(|step| matches!(step, Step::Host(_))) {
        used.insert(surfaces::SPAWN.to_string());
    }
    let text = serde_json::to_string(&(&s.vars, &s.steps, &s.checks)).unwrap_or_default();
    let mut rest = text.as_str();
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else { break };
        let path = after[..end].trim();
        let mut parts = path.split('.');
        match (parts.next(), parts.next()) {
            (Some("fixtures"), Some(id)) => {
                used.insert(surfaces::fixture_id(id));
            }
            (Some("facts"), Some(name)) => {
                used.insert(surfaces::fact_id(name));
            }
            _ => {}
        }
        rest = &after[end + 2..];
    }
    Ok(used)
}

/// The surfaces `s` needs: those its steps use ([`used_surfaces`]), in id order. A scenario
/// file that still states `surfaces` must state exactly those.
fn check_scenario_surfaces(
    s: &Scenario,
    stated: bool,
    surfaces: &Surfaces,
) -> Result<Vec<String>, SuiteError> {
    let file = s.file.as_str();
    let used = used_surfaces(s, surfaces).map_err(|m| reference(file, "/steps".into(), m))?;
    if let Some(unlisted) = used.iter().find(|id| surfaces.get(id).is_none()) {
        return Err(reference(
            file,
            "/steps".into(),
            format!(
                "the steps use surface \"{unlisted}\", which {SURFACES_FILE} does not list; add it there (a member toolcert adds to an upstream seam needs a field:… surface of kind extension-field)"
            ),
        ));
    }
    if !stated {
        return Ok(used.into_iter().collect());
    }
    for (i, id) in s.surfaces.iter().enumerate() {
        if surfaces.get(id).is_none() {
            return Err(reference(
                file,
                format!("/surfaces/{i}"),
                format!("unknown surface \"{id}\"; surfaces are listed in {SURFACES_FILE}"),
            ));
        }
    }
    let declared: BTreeSet<String> = s.surfaces.iter().cloned().collect();
    if let Some(missing) = used.difference(&declared).next() {
        return Err(reference(
            file,
            "/surfaces".into(),
            format!(
                "the steps use surface \"{missing}\" but the scenario does not declare it; remove /surfaces (the loader derives it from the steps), or add it"
            ),
        ));
    }
    if let Some(unused) = declared.difference(&used).next() {
        return Err(reference(
            file,
            "/surfaces".into(),
            format!(
                "declares surface \"{unused}\", which no step uses; remove /surfaces (the loader derives it from the steps), or remove it"
            ),
        ));
    }
    Ok(used.into_iter().collect())
}

/// Every pointer a check reads names a root of the observation document and, below
/// `steps`, `receivers`, `providers` or `mcpServers`, a step of the scenario that makes it;
/// every pattern compiles and every template is well formed.
fn check_reads(s: &Scenario) -> Result<(), SuiteError> {
    let file = s.file.as_str();
    let made = |root: &str, name: &str| -> bool {
        s.steps.iter().any(|step| {
            step.name() == name
                && match root {
                    "receivers" => matches!(step, Step::Receiver(_)),
                    "providers" => matches!(step, Step::Provider(_)),
                    "mcpServers" => matches!(step, Step::McpServer(_)),
                    _ => !matches!(
                        step,
                        Step::Receiver(_) | Step::Provider(_) | Step::McpServer(_)
                    ),
                }
        })
    };
    for (i, check) in s.checks.iter().enumerate() {
        let at = format!("/checks/{i}");
        let r = Reads::of(check);
        for pointer in r.observation_pointers() {
            let (root, name) = reads::root_of(&pointer);
            if !reads::ROOTS.contains(&root) {
                return Err(reference(
                    file,
                    at.clone(),
                    format!(
                        "pointer {pointer} starts at \"/{root}\", which the observation document does not have (roots: {})",
                        reads::ROOTS.join(", ")
                    ),
                ));
            }
            if matches!(root, "steps" | "receivers" | "providers" | "mcpServers") {
                let Some(name) = name else {
                    return Err(reference(
                        file,
                        at.clone(),
                        format!("pointer {pointer} must name a step below /{root}"),
                    ));
                };
                if !made(root, &name) {
                    return Err(reference(
                        file,
                        at.clone(),
                        format!(
                            "pointer {pointer} names {root} \"{name}\", which no step of this scenario makes"
                        ),
                    ));
                }
                let field = pointer
                    .split('/')
                    .nth(3)
                    .map(|f| f.replace("~1", "/").replace("~0", "~"));
                check_field(s, check, &at, &pointer, root, &name, field.as_deref())?;
            }
        }
        // Placeholders of expected values name fields too (`{{steps.call.runId}}`).
        for path in &r.placeholders {
            let mut parts = path.split('.');
            let (Some(root), Some(name)) = (parts.next(), parts.next()) else {
                continue;
            };
            if matches!(root, "steps" | "receivers" | "providers" | "mcpServers")
                && made(root, name)
            {
                let shown = format!("{{{{{path}}}}}");
                check_field(s, check, &at, &shown, root, name, parts.next())?;
            }
        }
        for pattern in &r.patterns {
            if let Err(e) = regex::Regex::new(pattern) {
                return Err(reference(
                    file,
                    at.clone(),
                    format!("pattern {pattern:?} does not compile: {e}"),
                ));
            }
        }
        for text in &r.templates {
            let opens = text.matches("{{").count();
            if opens != text.matches("}}").count() || r.placeholders.iter().any(String::is_empty) {
                return Err(reference(
                    file,
                    at.clone(),
                    format!("template {text:?} is not well formed ({{{{path}}}} pairs)"),
                ));
            }
        }
        let inferred = crate::expect::evidence_of(
            s,
            &crate::suite::Check {
                evidence: None,
                ..check.clone()
            },
        );
        if let Some(declared) = check.evidence
            && declared > inferred
        {
            return Err(reference(
                file,
                format!("{at}/evidence"),
                format!(
                    "declares {declared} evidence but reads no toolcert double; only a check of a receiver, provider or MCP server observation is double"
                ),
            ));
        }
        if check.guards.is_some() && !check.control {
            return Err(reference(
                file,
                format!("{at}/guards"),
                "only a control (\"control\": true) guards other rows".into(),
            ));
        }
        for (j, row) in check.guards.iter().flatten().enumerate() {
            if !s.rows.contains(row) {
                return Err(reference(
                    file,
                    format!("{at}/guards/{j}"),
                    format!("guards row \"{row}\", which is not in this scenario's /rows"),
                ));
            }
        }
    }
    Ok(())
}

/// A check reading `/ROOT/NAME/FIELD/…` (or `{{ROOT.NAME.FIELD…}}`) names a field the
/// observation of step NAME's kind has: a typo would otherwise read as "not observed" and
/// make the check `blocked` (or a `notPresent` pass) on every host.
fn check_field(
    s: &Scenario,
    check: &crate::suite::Check,
    at: &str,
    shown: &str,
    root: &str,
    name: &str,
    field: Option<&str>,
) -> Result<(), SuiteError> {
    let Some(field) = field else {
        return Ok(());
    };
    let Some((step, fields)) = s.steps.iter().find_map(|step| {
        let (r, fields) = observation_fields::of_step(step);
        (step.name() == name && r.name() == root).then_some((step, fields))
    }) else {
        return Ok(());
    };
    if fields.is_empty() || fields.contains(&field) {
        return Ok(());
    }
    let kind = serde_json::to_value(step)
        .ok()
        .and_then(|v| v.get("step").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_default();
    Err(reference(
        &s.file,
        at.to_string(),
        format!(
            "check {}: {shown} names field \"{field}\" of {root} \"{name}\", which a {kind} step's observation does not have (its fields: {})",
            check.id,
            fields.join(", ")
        ),
    ))
}

/// Every check of the scenario is guarded by a positive control (one that guards its row, or
/// one it requires, directly or through other checks), unless the registry says why its row
/// needs none: a check must never be able to convict on a setup nobody showed to work.
fn check_controls(s: &Scenario, registry: &Registry) -> Result<(), SuiteError> {
    fn requires_control(s: &Scenario, check: &crate::suite::Check, depth: usize) -> bool {
        depth < 16
            && check.requires.iter().any(|id| {
                s.checks
                    .iter()
                    .find(|c| &c.id == id)
                    .is_some_and(|dep| dep.control || requires_control(s, dep, depth + 1))
            })
    }
    for (i, check) in s.checks.iter().enumerate() {
        if check.control {
            continue;
        }
        let guarded =
            s.checks.iter().any(|c| c.guards_row(&check.row)) || requires_control(s, check, 0);
        let exempt = registry
            .row(&check.row)
            .is_some_and(|r| r.no_control.is_some());
        if !guarded && !exempt {
            return Err(reference(
                &s.file,
                format!("/checks/{i}"),
                format!(
                    "check \"{}\" of row {} is not guarded by a positive control: add a check with \"control\": true for {} (or list the row in a control's \"guards\", or require a control), or give the row a noControl reason in {REGISTRY_FILE}",
                    check.id, check.row, check.row
                ),
            ));
        }
    }
    Ok(())
}

/// A draft's rule never decides an accepted row: a check of an accepted row may require a
/// check of a draft (tentative) row only when that check is a positive control, which proves
/// the setup, not the draft's rule. Otherwise a host breaking the draft would leave the
/// accepted row `blocked`, and a tentative row would deny certification through another.
fn check_tentative_requirements(s: &Scenario, registry: &Registry) -> Result<(), SuiteError> {
    let tentative = |row: &str| registry.row(row).is_some_and(|r| r.tentative());
    for (i, check) in s.checks.iter().enumerate() {
        if tentative(&check.row) {
            continue;
        }
        for (j, id) in check.requires.iter().enumerate() {
            let Some(dep) = s.checks.iter().find(|c| &c.id == id) else {
                continue;
            };
            if tentative(&dep.row) && !dep.control {
                return Err(reference(
                    &s.file,
                    format!("/checks/{i}/requires/{j}"),
                    format!(
                        "check \"{}\" of row {} (accepted) requires \"{}\", a check of the draft row {}: a draft's rule must not decide an accepted row; require a positive control instead (a check with \"control\": true that proves the same setup)",
                        check.id, check.row, dep.id, dep.row
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn check_registry(registry: &Registry) -> Result<(), SuiteError> {
    let families: BTreeSet<&str> = registry.families.iter().map(|f| f.id.as_str()).collect();
    check_profiles(registry, &families)?;
    let mut seen = BTreeSet::new();
    for (i, row) in registry.rows.iter().enumerate() {
        if !seen.insert(row.id.as_str()) {
            return Err(reference(
                REGISTRY_FILE,
                format!("/rows/{i}/id"),
                format!("row id \"{}\" appears twice; ids must be unique", row.id),
            ));
        }
        if !families.contains(row.family.as_str()) {
            return Err(reference(
                REGISTRY_FILE,
                format!("/rows/{i}/family"),
                format!(
                    "row {} names unknown family \"{}\"; add it to /families",
                    row.id, row.family
                ),
            ));
        }
    }
    Ok(())
}

/// Every family belongs to exactly one profile, and profiles name only known families and
/// have unique ids: a row outside every profile could never deny certification.
fn check_profiles(registry: &Registry, families: &BTreeSet<&str>) -> Result<(), SuiteError> {
    let mut ids = BTreeSet::new();
    let mut owner: BTreeMap<&str, &str> = BTreeMap::new();
    for (i, p) in registry.profiles.iter().enumerate() {
        if !ids.insert(p.id.as_str()) {
            return Err(reference(
                REGISTRY_FILE,
                format!("/profiles/{i}/id"),
                format!("profile id \"{}\" appears twice; ids must be unique", p.id),
            ));
        }
        for (j, f) in p.families.iter().enumerate() {
            if !families.contains(f.as_str()) {
                return Err(reference(
                    REGISTRY_FILE,
                    format!("/profiles/{i}/families/{j}"),
                    format!(
                        "profile {} names unknown family \"{f}\"; add it to /families",
                        p.id
                    ),
                ));
            }
            if let Some(other) = owner.insert(f.as_str(), p.id.as_str()) {
                return Err(reference(
                    REGISTRY_FILE,
                    format!("/profiles/{i}/families/{j}"),
                    format!(
                        "family {f} is in profiles {other} and {}; a family belongs to exactly one profile",
                        p.id
                    ),
                ));
            }
        }
    }
    if let Some(orphan) = families.iter().find(|f| !owner.contains_key(*f)) {
        return Err(reference(
            REGISTRY_FILE,
            "/profiles".to_string(),
            format!(
                "family {orphan} is in no profile, so its rows could never deny certification; add it to one profile's families"
            ),
        ));
    }
    Ok(())
}

fn check_scenario(s: &Scenario, registry: &Registry) -> Result<(), SuiteError> {
    let file = s.file.as_str();
    for (i, row) in s.rows.iter().enumerate() {
        let Some(r) = registry.row(row) else {
            return Err(reference(
                file,
                format!("/rows/{i}"),
                format!(
                    "unknown requirement row \"{row}\"; rows are listed in scenarios/requirements.json"
                ),
            ));
        };
        if let Some(reason) = &r.unwitnessable {
            return Err(reference(
                file,
                format!("/rows/{i}"),
                format!(
                    "row \"{row}\" is marked unwitnessable in the registry ({reason}); a scenario cannot witness it"
                ),
            ));
        }
    }
    let mut names = BTreeSet::new();
    for (i, step) in s.steps.iter().enumerate() {
        if !names.insert(step.name()) {
            return Err(reference(
                file,
                format!("/steps/{i}/name"),
                format!(
                    "step name \"{}\" is used twice; observations are keyed by name",
                    step.name()
                ),
            ));
        }
        if let Err((at, message)) = step.check() {
            return Err(reference(file, format!("/steps/{i}{at}"), message));
        }
        // A kill point, an abandon point or a release must name a double made by an earlier
        // step.
        let earlier = |kind: &str, name: &str| {
            s.steps[..i].iter().any(|e| match e {
                Step::Receiver(r) => kind == "receiver" && r.name == name,
                Step::Provider(p) => kind == "provider" && p.name == name,
                _ => false,
            })
        };
        let refers: Vec<(&str, &str, &str)> = match step {
            Step::Release(r) => vec![("receiver", r.receiver.as_str(), "receiver")],
            Step::Wait(w) => w
                .until
                .receiver
                .iter()
                .map(|n| ("receiver", n.as_str(), "until/receiver"))
                .chain(
                    w.until
                        .provider
                        .iter()
                        .map(|n| ("provider", n.as_str(), "until/provider")),
                )
                .collect(),
            Step::Http(h) => h
                .abandon
                .iter()
                .flat_map(|a| {
                    a.receiver
                        .iter()
                        .map(|n| ("receiver", n.as_str(), "abandon/receiver"))
                        .chain(
                            a.provider
                                .iter()
                                .map(|n| ("provider", n.as_str(), "abandon/provider")),
                        )
                })
                .collect(),
            _ => Vec::new(),
        };
        for (kind, name, at) in refers {
            if !earlier(kind, name) {
                return Err(reference(
                    file,
                    format!("/steps/{i}/{at}"),
                    format!("no earlier {kind} step is named \"{name}\""),
                ));
            }
        }
    }
    let mut check_ids = BTreeSet::new();
    for (i, check) in s.checks.iter().enumerate() {
        if !check_ids.insert(check.id.as_str()) {
            return Err(reference(
                file,
                format!("/checks/{i}/id"),
                format!("check id \"{}\" is used twice in this scenario", check.id),
            ));
        }
        if !s.rows.contains(&check.row) {
            return Err(reference(
                file,
                format!("/checks/{i}/row"),
                format!(
                    "check names row \"{}\", which is not in this scenario's /rows",
                    check.row
                ),
            ));
        }
    }
    for (i, check) in s.checks.iter().enumerate() {
        for (j, req) in check.requires.iter().enumerate() {
            if !check_ids.contains(req.as_str()) || req == &check.id {
                return Err(reference(
                    file,
                    format!("/checks/{i}/requires/{j}"),
                    format!(
                        "requires unknown check \"{req}\"; name another check of this scenario"
                    ),
                ));
            }
        }
    }
    for (i, row) in s.rows.iter().enumerate() {
        if !s.checks.iter().any(|c| &c.row == row) {
            return Err(reference(
                file,
                format!("/rows/{i}"),
                format!(
                    "row \"{row}\" has no check in this scenario; a row without a check would never be observed"
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn embedded_with(file: &str, text: &str) -> Result<Suite, SuiteError> {
        let mut files: Vec<(String, String)> = crate::suite::embedded::FILES
            .iter()
            .map(|(p, c)| (p.to_string(), c.to_string()))
            .collect();
        files.push((file.to_string(), text.to_string()));
        from_files(files)
    }

    const MINIMAL: &str = r#"{"title": "t", "rows": ["DISC-7"], "gate": null, "kills": [],
        "steps": [], "checks": [{"id": "c", "row": "DISC-7", "says": "s", "at": "/discovery", "expect": {"present": true}}]}"#;

    #[test]
    fn the_embedded_suite_loads() {
        let suite = Suite::embedded().unwrap();
        assert!(!suite.scenarios.is_empty());
        assert!(suite.registry.rows.len() > 100);
    }

    #[test]
    fn a_minimal_scenario_loads() {
        embedded_with("scenarios/test/min.json", MINIMAL).unwrap();
    }

    #[test]
    fn an_accepted_row_may_require_a_draft_row_s_control_but_not_its_rule() {
        // DISC-7 is accepted, TURN-A1 a draft (tentative) row.
        let scenario = |control: bool| {
            let role = if control {
                r#""control": true, "guards": ["DISC-7"]"#
            } else {
                r#""control": false"#
            };
            format!(
                r#"{{"title": "t", "rows": ["DISC-7", "TURN-A1"], "gate": null, "kills": [],
                "steps": [], "checks": [
                  {{"id": "setup", "row": "DISC-7", "says": "s", "at": "/discovery", "expect": {{"present": true}}, "control": true, "guards": ["DISC-7", "TURN-A1"]}},
                  {{"id": "draft", "row": "TURN-A1", "says": "s", "at": "/discovery", "expect": {{"present": true}}, {role}}},
                  {{"id": "c", "row": "DISC-7", "says": "s", "at": "/discovery", "expect": {{"present": true}}, "requires": ["draft"]}}]}}"#
            )
        };
        let err = embedded_with("scenarios/test/gated.json", &scenario(false))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("/checks/2/requires/0") && err.contains("draft row TURN-A1"),
            "{err}"
        );
        embedded_with("scenarios/test/gated.json", &scenario(true)).unwrap();
    }

    #[test]
    fn unknown_row_is_an_error_naming_file_and_pointer() {
        let text = MINIMAL.replacen(
            r#""rows": ["DISC-7"]"#,
            r#""rows": ["DISC-7", "NOPE-1"]"#,
            1,
        );
        let err = embedded_with("scenarios/test/bad.json", &text)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("scenarios/test/bad.json")
                && err.contains("\"/rows/1\"")
                && err.contains("NOPE-1"),
            "{err}"
        );
    }

    #[test]
    fn schema_violation_names_pointer_and_expectation() {
        let text = MINIMAL.replacen(
            r#"{"present": true}"#,
            r#"{"equals": 1, "absent": true}"#,
            1,
        );
        let err = embedded_with("scenarios/test/bad.json", &text)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("scenarios/test/bad.json") && err.contains("/checks/0/expect"),
            "{err}"
        );
        let text = MINIMAL.replacen(
            r#""steps": []"#,
            r#""steps": [{"step": "seam", "name": "a", "seam": "x", "body": {}}]"#,
            1,
        );
        let err = embedded_with("scenarios/test/bad.json", &text)
            .unwrap_err()
            .to_string();
        assert!(err.contains("/steps/0") && err.contains("role"), "{err}");
    }

    #[test]
    fn duplicate_keys_and_bad_json_name_the_line() {
        let err = embedded_with("scenarios/test/dup.json", "{\"id\": 1,\n \"id\": 2}")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("scenarios/test/dup.json:2:") && err.contains("duplicate"),
            "{err}"
        );
    }

    #[test]
    fn a_malformed_provider_script_names_the_pointer_inside_the_rounds() {
        let text = MINIMAL.replacen(
            r#""steps": []"#,
            r#""steps": [{"step": "provider", "name": "m", "rounds": [{"text": "ok"}, {"toolCalls": [{"arguments": {}}]}]}]"#,
            1,
        );
        let err = embedded_with("scenarios/test/bad.json", &text)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("scenarios/test/bad.json")
                && err.contains("/steps/0/rounds/1/toolCalls/0"),
            "{err}"
        );
    }

    #[test]
    fn a_row_without_a_check_is_an_error() {
        let text = MINIMAL.replacen(
            r#""rows": ["DISC-7"]"#,
            r#""rows": ["DISC-7", "DISC-6"]"#,
            1,
        );
        let err = embedded_with("scenarios/test/bad.json", &text)
            .unwrap_err()
            .to_string();
        assert!(err.contains("DISC-6") && err.contains("no check"), "{err}");
    }

    /// A scenario of an ordinary row (HOOKS-AUTH-1 needs a control) with one seam step.
    const GUARDED: &str = r#"{"title": "t", "rows": ["HOOKS-AUTH-1"], "gate": null, "kills": [],
        "surfaces": ["seam:toolhooks/invoke"],
        "steps": [{"step": "seam", "name": "call", "seam": "toolhooks/invoke", "role": "operator", "body": {"principal": "p", "toolName": "t"}}],
        "checks": [
          {"id": "ok", "row": "HOOKS-AUTH-1", "says": "s", "at": "/steps/call/toolReturned/status", "expect": {"equals": "ok"}, "control": true},
          {"id": "c", "row": "HOOKS-AUTH-1", "says": "s", "at": "/steps/call/http/status", "expect": {"equals": 200}}
        ]}"#;

    #[test]
    fn a_guarded_scenario_loads() {
        embedded_with("scenarios/test/g.json", GUARDED).unwrap();
    }

    #[test]
    fn a_check_no_control_guards_is_rejected() {
        let text = GUARDED.replacen(r#", "control": true"#, "", 1);
        let err = embedded_with("scenarios/test/g.json", &text)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("not guarded by a positive control") && err.contains("HOOKS-AUTH-1"),
            "{err}"
        );
    }

    #[test]
    fn a_pointer_naming_a_field_the_step_kind_lacks_is_rejected() {
        let text = GUARDED.replacen("/steps/call/http/status", "/steps/call/htpp/status", 1);
        let err = embedded_with("scenarios/test/g.json", &text)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("scenarios/test/g.json: at JSON pointer \"/checks/1\"")
                && err.contains("check c: /steps/call/htpp/status names field \"htpp\"")
                && err.contains("a seam step's observation does not have")
                && err.contains("(its fields: http, body, runId, toolCalled, toolReturned)"),
            "{err}"
        );
        // In an expected value's placeholder, and under a double's root, alike.
        let text = GUARDED.replacen(
            r#""expect": {"equals": 200}"#,
            r#""expect": {"equals": "{{steps.call.runid}}"}"#,
            1,
        );
        let err = embedded_with("scenarios/test/g.json", &text)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("{{steps.call.runid}} names field \"runid\""),
            "{err}"
        );
        let text = GUARDED
            .replacen(
                r#""steps": ["#,
                r#""steps": [{"step": "receiver", "name": "r"}, "#,
                1,
            )
            .replacen("/steps/call/http/status", "/receivers/r/cuont", 1);
        let err = embedded_with("scenarios/test/g.json", &text)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("names field \"cuont\" of receivers \"r\"")
                && err.contains("a receiver step's")
                && err.contains("count"),
            "{err}"
        );
        // A field the kind has, at any depth below it, loads.
        let text = GUARDED.replacen("/steps/call/http/status", "/steps/call/body/anything", 1);
        embedded_with("scenarios/test/g.json", &text).unwrap();
    }

    #[test]
    fn a_pointer_naming_no_step_is_rejected() {
        let text = GUARDED.replacen("/steps/call/http/status", "/steps/cal/http/status", 1);
        let err = embedded_with("scenarios/test/g.json", &text)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("/checks/1") && err.contains("\"cal\"") && err.contains("no step"),
            "{err}"
        );
        let text = GUARDED.replacen("/steps/call/http/status", "/step/call", 1);
        let err = embedded_with("scenarios/test/g.json", &text)
            .unwrap_err()
            .to_string();
        assert!(err.contains("/step"), "{err}");
        let text = GUARDED.replacen(
            r#""expect": {"equals": 200}"#,
            r#""expect": {"equalsAt": "/receivers/none/count"}"#,
            1,
        );
        let err = embedded_with("scenarios/test/g.json", &text)
            .unwrap_err()
            .to_string();
        assert!(err.contains("receivers \"none\""), "{err}");
    }

    #[test]
    fn a_bad_pattern_or_template_is_rejected_at_load() {
        let text = GUARDED.replacen(r#"{"equals": 200}"#, r#"{"matches": "(unclosed"}"#, 1);
        let err = embedded_with("scenarios/test/g.json", &text)
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not compile"), "{err}");
        let text = GUARDED.replacen(r#"{"equals": 200}"#, r#"{"equals": "{{vars.nonce"}"#, 1);
        let err = embedded_with("scenarios/test/g.json", &text)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not well formed"), "{err}");
    }

    #[test]
    fn stated_surfaces_must_match_what_the_steps_use() {
        // Left out, they are derived from the steps.
        let text = GUARDED.replacen(r#""surfaces": ["seam:toolhooks/invoke"],"#, "", 1);
        let suite = embedded_with("scenarios/test/g.json", &text).unwrap();
        assert_eq!(
            suite.scenario("test.g").unwrap().surfaces,
            ["seam:toolhooks/invoke"]
        );
        // Stated, an extension member of an upstream seam is a surface of its own.
        let text = GUARDED.replacen(
            r#""toolName": "t"}"#,
            r#""toolName": "t", "receiverUrl": "http://127.0.0.1:1/x"}"#,
            1,
        );
        let err = embedded_with("scenarios/test/g.json", &text)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("field:toolhooks/invoke.receiverUrl")
                && err.contains("does not declare")
                && err.contains("remove /surfaces"),
            "{err}"
        );
        let text = GUARDED.replacen(
            r#"["seam:toolhooks/invoke"]"#,
            r#"["seam:toolhooks/invoke", "spawn"]"#,
            1,
        );
        let err = embedded_with("scenarios/test/g.json", &text)
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"spawn\", which no step uses"), "{err}");
        // Derived or stated, a member surfaces.json does not list is named with the fix.
        let text = GUARDED
            .replacen(r#""surfaces": ["seam:toolhooks/invoke"],"#, "", 1)
            .replacen(r#""toolName": "t"}"#, r#""toolName": "t", "novel": 1}"#, 1);
        let err = embedded_with("scenarios/test/g.json", &text)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(
                "\"field:toolhooks/invoke.novel\", which scenarios/surfaces.json does not list"
            ),
            "{err}"
        );
    }

    #[test]
    fn a_check_cannot_claim_evidence_it_does_not_read() {
        let text = GUARDED.replacen(
            r#""expect": {"equals": 200}}"#,
            r#""expect": {"equals": 200}, "evidence": "double"}"#,
            1,
        );
        let err = embedded_with("scenarios/test/g.json", &text)
            .unwrap_err()
            .to_string();
        assert!(err.contains("declares double evidence"), "{err}");
    }
}
