//! End-to-end tests of the release-gate features, one binary to keep link time down:
//! expectation baselines, offline recheck, and partitions with merge.

mod gate {
    pub mod baseline;
    pub mod partition;
    pub mod recheck;
}
