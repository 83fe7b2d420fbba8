//! Reading report rows in end-to-end tests.

/// Whether a report row is `inapplicable` because its only leg belongs to the other wire major
/// (IDEM-L1-9's v1 claims-check on the v2 reference host: the closed v2 idempotency record
/// cannot carry `layer1RetentionSeconds`). Every other row of the embedded host passes.
pub fn other_major(row: &serde_json::Value) -> bool {
    row["disposition"] == "inapplicable"
        && row["detail"]
            .as_str()
            .is_some_and(|d| d.contains("wire major"))
}
