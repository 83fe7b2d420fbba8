//! The JSON Schemas in `schemas/`, compiled once, and validation with precise errors.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::error::SuiteError;

/// Compiled schemas, keyed by their path relative to the repo (`schemas/report.schema.json`).
#[derive(Clone, Default)]
pub struct SchemaSet {
    compiled: BTreeMap<String, Arc<jsonschema::Validator>>,
}

impl std::fmt::Debug for SchemaSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.compiled.keys()).finish()
    }
}

/// One violation: where in the instance, and what was expected there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON pointer into the instance.
    pub pointer: String,
    /// The validator's message.
    pub message: String,
}

impl SchemaSet {
    /// Compile one schema document. Formats are asserted (a `date-time` must be one); remote
    /// `$ref`s cannot resolve (the crate's network and file resolvers are compiled out).
    pub fn insert(&mut self, path: &str, schema: &Value) -> Result<(), SuiteError> {
        let validator = jsonschema::options()
            .should_validate_formats(true)
            .build(schema)
            .map_err(|e| SuiteError::Schema {
                file: path.to_string(),
                pointer: e.instance_path().to_string(),
                message: format!("not a usable JSON Schema: {e}"),
                schema: "JSON Schema 2020-12 meta-schema".into(),
            })?;
        self.compiled.insert(path.to_string(), Arc::new(validator));
        Ok(())
    }

    /// Whether a schema with this path is loaded.
    pub fn has(&self, path: &str) -> bool {
        self.compiled.contains_key(path)
    }

    /// Every violation of `instance` against the schema at `path` (empty when valid).
    /// Deeper violations come first: they say the most about what to fix.
    pub fn violations(&self, path: &str, instance: &Value) -> Result<Vec<Violation>, SuiteError> {
        let validator = self
            .compiled
            .get(path)
            .ok_or_else(|| SuiteError::Missing(path.to_string()))?;
        let mut out: Vec<Violation> = validator
            .iter_errors(instance)
            .map(|e| Violation {
                pointer: e.instance_path().to_string(),
                message: e.to_string(),
            })
            .collect();
        out.sort_by_key(|v| std::cmp::Reverse(v.pointer.matches('/').count()));
        Ok(out)
    }

    /// Validate `instance` (from `file`) against the schema at `path`, failing with the first
    /// (deepest) violation.
    pub fn validate(&self, path: &str, file: &str, instance: &Value) -> Result<(), SuiteError> {
        match self.violations(path, instance)?.into_iter().next() {
            None => Ok(()),
            Some(v) => Err(SuiteError::Schema {
                file: file.to_string(),
                pointer: v.pointer,
                message: v.message,
                schema: path.to_string(),
            }),
        }
    }
}
