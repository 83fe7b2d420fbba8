//! Reading report rows in end-to-end tests.

/// Whether a report row of the embedded (v2) reference host is `inapplicable` because its only
/// leg belongs to wire major 1: IDEM-L1-9's v1 claims-check (the closed v2 idempotency record
/// cannot carry `layer1RetentionSeconds`), and IDEM-L1-10, witnessed only through the v1 span
/// scrape seam, gated on `observability.testSeams.otelScrape`, a flag v2 forbids
/// (`conformance.md` §The seams profile). Every other row of the embedded host passes.
pub fn other_major(row: &serde_json::Value) -> bool {
    row["disposition"] == "inapplicable"
        && row["detail"].as_str().is_some_and(|d| {
            d.contains("wire major") || d.contains("observability.testSeams.otelScrape")
        })
}
