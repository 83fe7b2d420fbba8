//! Named, deliberately broken variants ("mutants") of the reference host.
//!
//! Each mutant is one known bug at one named place in the code. A correct
//! conformance harness must fail at least one check against every mutant and
//! pass every check against the unmutated host. The check for a mutant sits at
//! exactly the place where its bug lives (search for `Mutant::<Variant>`), so a
//! reader can see the correct behaviour and the broken one side by side.
//!
//! The [`Mutant`] enum lives in [`crate::base::mutant`] (it imports nothing, so
//! every layer may use it); each mutant's name and the line saying what it
//! breaks are declared in the module it breaks, as that module's `MUTANTS`
//! table. This registry gathers the tables into [`ALL`], checked at compile
//! time to hold every variant exactly once, in variant order.

use std::fmt;
use std::str::FromStr;

pub use crate::base::mutant::{Mutant, MutantInfo, PROBE_SLOTS};

/// Every module's table of the mutants planted in it.
const TABLES: &[&[MutantInfo]] = &[
    crate::base::args_hash::MUTANTS,
    crate::domain::a2a::MUTANTS,
    crate::domain::a2a_tasks::MUTANTS,
    crate::domain::agents::MUTANTS,
    crate::surface::a2a::MUTANTS,
    crate::domain::authz::MUTANTS,
    crate::domain::catalog::MUTANTS,
    crate::surface::catalog_routes::MUTANTS,
    crate::domain::tool_session::MUTANTS,
    crate::domain::tool_view::MUTANTS,
    crate::surface::discovery::MUTANTS,
    crate::surface::effect_seams::MUTANTS,
    crate::surface::error_shape::MUTANTS,
    crate::surface::workflow_fork::MUTANTS,
    crate::domain::effects::claim::MUTANTS,
    crate::domain::effects::identity::MUTANTS,
    crate::domain::effects::ledger::MUTANTS,
    crate::domain::effects::MUTANTS,
    crate::domain::effects::retry::MUTANTS,
    crate::domain::effects::sweeper::MUTANTS,
    crate::surface::interrupt_routes::MUTANTS,
    crate::domain::layer1::MUTANTS,
    crate::surface::mcp_server::call::MUTANTS,
    crate::surface::mcp_server::MUTANTS,
    crate::surface::mcp_server::results::MUTANTS,
    crate::surface::mcp_server::tasks::MUTANTS,
    crate::domain::rate_limit::MUTANTS,
    crate::surface::seams::effect_fire::MUTANTS,
    crate::surface::seams::mcp_client::MUTANTS,
    crate::surface::seams::mcp_mount::MUTANTS,
    crate::surface::seams::packs::MUTANTS,
    crate::surface::seams::safe_fetch::MUTANTS,
    crate::surface::seams::toolhooks::MUTANTS,
    crate::surface::upstream::seams::MUTANTS,
    crate::base::tool_events::MUTANTS,
    crate::turn::admission::MUTANTS,
    crate::turn::allowlist::MUTANTS,
    crate::turn::approval::MUTANTS,
    crate::turn::channels::MUTANTS,
    crate::turn::clarification::MUTANTS,
    crate::turn::divergence::MUTANTS,
    crate::turn::driver::MUTANTS,
    crate::turn::feedback::MUTANTS,
    crate::surface::run_actions::MUTANTS,
    crate::turn::mcp::MUTANTS,
    crate::turn::negotiation::MUTANTS,
    crate::turn::plan::MUTANTS,
    crate::turn::provider_tools::MUTANTS,
    crate::turn::records::MUTANTS,
    crate::turn::recovery::MUTANTS,
    crate::turn::recovery::serve::MUTANTS,
    crate::turn::replay::MUTANTS,
    crate::turn::tool_support::MUTANTS,
    crate::turn::trust::MUTANTS,
    crate::domain::webhooks::MUTANTS,
];

/// The entries of all `tables`.
const fn count(tables: &[&[MutantInfo]]) -> usize {
    let mut total = 0;
    let mut t = 0;
    while t < tables.len() {
        total += tables[t].len();
        t += 1;
    }
    total
}

/// The entries of all `tables`, sorted by variant (insertion sort: it runs
/// once, at compile time).
const fn gather<const N: usize>(tables: &[&[MutantInfo]]) -> [MutantInfo; N] {
    let mut out = [tables[0][0]; N];
    let mut n = 0;
    let mut t = 0;
    while t < tables.len() {
        let mut i = 0;
        while i < tables[t].len() {
            out[n] = tables[t][i];
            n += 1;
            i += 1;
        }
        t += 1;
    }
    let mut i = 1;
    while i < N {
        let mut j = i;
        while j > 0 && (out[j - 1].mutant as usize) > (out[j].mutant as usize) {
            out.swap(j - 1, j);
            j -= 1;
        }
        i += 1;
    }
    out
}

const GATHERED: [MutantInfo; count(TABLES)] = gather(TABLES);

/// Every mutant, in its canonical (documented) order: the order of the
/// [`Mutant`] variants.
pub const ALL: &[MutantInfo] = &GATHERED;

// Every variant exactly once: entry `i` is variant `i` and there are as many
// entries as variants. A mutant missing from (or repeated in) the tables does
// not compile. This also makes `Mutant::info`'s index total.
const _: () = {
    assert!(ALL.len() == Mutant::COUNT);
    let mut i = 0;
    while i < ALL.len() {
        assert!(ALL[i].mutant as usize == i);
        i += 1;
    }
};

impl Mutant {
    /// The entry of [`ALL`] describing this mutant.
    fn info(self) -> &'static MutantInfo {
        // Entry `i` is variant `i` (checked at compile time above); past
        // the end is the probe.
        ALL.get(self as usize).unwrap_or(&PROBE)
    }

    /// The kebab-case name accepted by `--mutant`.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// One short line saying what this mutant breaks.
    pub fn breaks(self) -> &'static str {
        self.info().breaks
    }
}

/// The entry of every probe ([`Mutant::Probe`] and the other slots): not in [`ALL`], and not
/// accepted by `--mutant`.
const PROBE: MutantInfo = MutantInfo {
    mutant: Mutant::Probe,
    name: "probe",
    breaks: "nothing: it records the mutant sites the host reaches",
};

/// Start a probe window in `slot`: forget every site the probe of that slot
/// ([`Mutant::probe`]) reached so far.
pub fn probe_reset(slot: usize) {
    crate::base::mutant::probe::reset(slot);
}

/// The mutants whose sites the probe of `slot` reached since
/// [`probe_reset`], in [`ALL`] order.
pub fn probe_reached(slot: usize) -> Vec<Mutant> {
    crate::base::mutant::probe::reached(slot)
        .into_iter()
        .filter_map(|i| ALL.get(i).map(|info| info.mutant))
        .collect()
}

/// The mutants listed in a file a probe child wrote
/// ([`crate::base::mutant::probe::record_to`]): one variant index per
/// line. Lines that are no index of [`ALL`] are skipped.
pub fn probe_reached_in(text: &str) -> Vec<Mutant> {
    let mut reached: Vec<Mutant> = text
        .lines()
        .filter_map(|line| line.trim().parse::<usize>().ok())
        .filter_map(|i| ALL.get(i).map(|info| info.mutant))
        .collect();
    reached.sort_by_key(|m| *m as usize);
    reached.dedup_by_key(|m| *m as usize);
    reached
}

impl fmt::Display for Mutant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error for a mutant name that is not in [`ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown mutant `{given}`; valid names: {}", valid_names())]
pub struct UnknownMutant {
    /// The name that was given.
    pub given: String,
}

/// The valid mutant names, comma separated, in canonical order.
fn valid_names() -> String {
    ALL.iter()
        .map(|info| info.name)
        .collect::<Vec<_>>()
        .join(", ")
}

impl FromStr for Mutant {
    type Err = UnknownMutant;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ALL.iter()
            .find(|info| info.name == s)
            .map(|info| info.mutant)
            .ok_or_else(|| UnknownMutant {
                given: s.to_owned(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_round_trip_through_from_str() {
        for info in ALL {
            let parsed: Mutant = info.name.parse().expect("listed name parses");
            assert_eq!(parsed, info.mutant);
            assert_eq!(parsed.name(), info.name);
            assert_eq!(parsed.breaks(), info.breaks);
            assert_eq!(parsed.to_string(), info.name);
        }
    }

    #[test]
    fn names_are_unique_kebab_case() {
        // Variants are unique and complete by construction (a compile-time
        // check); names are only strings, so they are checked here.
        let names: HashSet<_> = ALL.iter().map(|i| i.name).collect();
        assert_eq!(names.len(), ALL.len());
        for info in ALL {
            assert!(
                info.name.split('-').all(|w| !w.is_empty()
                    && w.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())),
                "{}",
                info.name
            );
        }
    }

    #[test]
    fn no_table_is_empty() {
        for table in TABLES {
            assert!(!table.is_empty());
        }
    }

    #[test]
    fn breaks_lines_are_single_short_lines() {
        for info in ALL {
            assert!(!info.breaks.is_empty());
            assert!(!info.breaks.contains('\n'), "{}", info.name);
            assert!(!info.breaks.contains('\t'), "{}", info.name);
        }
    }

    #[test]
    fn unknown_name_lists_valid_names() {
        let err = "no-such-mutant".parse::<Mutant>().unwrap_err();
        let message = err.to_string();
        assert!(message.contains("no-such-mutant"));
        for info in ALL {
            assert!(message.contains(info.name), "missing {}", info.name);
        }
    }

    #[test]
    fn the_probe_records_the_sites_compared_with_it_and_matches_none() {
        // The only test that touches the process-wide record (slots 0 and 15).
        crate::base::mutant::probe::reset(0);
        crate::base::mutant::probe::reset(15);
        let probe = Some(Mutant::Probe);
        assert!(probe != Some(Mutant::ArgsHashRaw));
        assert!(Some(Mutant::DoubleReturn) != probe);
        assert!(probe.is_some_and(Mutant::is_probe));
        assert_eq!(
            probe_reached(0),
            vec![Mutant::ArgsHashRaw, Mutant::DoubleReturn]
        );
        // A real mutant compared with another records nothing.
        assert!(Some(Mutant::ArgsHashRaw) != Some(Mutant::InvokeThenCheck));
        assert_eq!(probe_reached(0).len(), 2);
        assert_eq!(Mutant::Probe.name(), "probe");
        assert!("probe".parse::<Mutant>().is_err(), "not a --mutant name");
        // Another slot records apart, and two probes match each other only
        // as the same slot.
        let last = Mutant::probe(15);
        assert_eq!(last.and_then(Mutant::probe_slot), Some(15));
        assert!(last != Some(Mutant::InvokeThenCheck));
        assert_eq!(probe_reached(15), vec![Mutant::InvokeThenCheck]);
        assert_eq!(probe_reached(0).len(), 2);
        assert_eq!(Mutant::probe(16), None);
        assert!(!Mutant::ArgsHashRaw.is_probe());
        crate::base::mutant::probe::reset(0);
        assert!(probe_reached(0).is_empty());
        assert_eq!(probe_reached(15).len(), 1);
        crate::base::mutant::probe::reset(15);
    }
}
