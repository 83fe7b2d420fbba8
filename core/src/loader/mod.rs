//! Loading the suite: the scenario files read (keyed checks, shorthand), their fragments and
//! `params` expanded, what the loader derives filled in, and every file validated against its
//! schema and cross-checked against the registry, the check vocabulary ([`crate::expect`]) and
//! the fields each step kind observes ([`crate::observation::fields`]). Above the suite's data
//! model ([`crate::suite`]), which it builds.

mod derived;
mod expand;
mod fragment;
pub(crate) mod keyed;
mod load;
mod mutants;
mod params;
mod shorthand;

use crate::suite::{Suite, SuiteError};

// The constructors of `Suite` live with the loader they run.
impl Suite {
    /// The suite embedded in this build of toolcert.
    pub fn embedded() -> Result<Suite, SuiteError> {
        let files = crate::suite::embedded::FILES
            .iter()
            .map(|(p, c)| (p.to_string(), c.to_string()))
            .collect();
        load::from_files(files)
    }

    /// Load the suite from a checkout: `DIR/scenarios/**.json` and `DIR/schemas/**.json`.
    pub fn from_dir(dir: &std::path::Path) -> Result<Suite, SuiteError> {
        load::from_dir(dir)
    }
}
