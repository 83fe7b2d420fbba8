//! The console report: what `toolcert run` and `toolcert merge` print at the end of a run: the profile table, then
//! one line per row that did not pass (blocked rows grouped by the surface they miss, with
//! where to read how to provide it), then the one verdict line. Everything comes from the
//! run's [`Certification`], so no line contradicts the exit status.

use std::collections::BTreeMap;

use crate::result::RunOutcome;
use crate::suite::Suite;
use crate::verdict::{Certification, Disposition, RowVerdict, Standing};

/// Longest reason printed on one console line (the reports keep the whole detail).
const REASON_CHARS: usize = 150;

/// Print the conclusion of a run: profiles, rows to fix, the baseline's account when there is
/// one, and the final verdict line.
pub fn print_conclusion(
    suite: &Suite,
    run: &RunOutcome,
    judgement: Option<&crate::baseline::Judgement>,
    strict_baseline_note: bool,
) {
    // Cleaned like every output: a row's reason quotes what the host sent.
    for line in conclusion_lines(suite, run) {
        crate::output::say(&line);
    }
    if let Some(j) = judgement {
        print_judgement(j, strict_baseline_note || run.strict);
    }
    println!("toolcert: {}", run.certification.final_line());
}

/// The lines of [`print_conclusion`] before the baseline and the verdict line.
pub fn conclusion_lines(suite: &Suite, run: &RunOutcome) -> Vec<String> {
    let c = &run.certification;
    let mut out = Vec::new();
    out.push(format!(
        "toolcert: {} rows judged ({} measured) in {} scenarios; {}",
        run.rows.len(),
        run.measured(),
        c.selection.scenarios_run,
        summary_counts(&run.rows)
    ));
    out.extend(profile_table(c));
    out.extend(rows_to_fix(suite, run));
    out
}

fn summary_counts(rows: &[RowVerdict]) -> String {
    let counts = super::json::counts(rows);
    let parts: Vec<String> = counts
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(d, n)| format!("{n} {d}"))
        .collect();
    if parts.is_empty() {
        "nothing judged".into()
    } else {
        parts.join(", ")
    }
}

/// One line per claimed profile, then the unclaimed and the tentative ones on a line each.
fn profile_table(c: &Certification) -> Vec<String> {
    let mut out = vec![format!(
        "  {:<16} {:<14} {:<12} {:>9}  rows",
        "profile", "verdict", "tier", "witnesses"
    )];
    let partial = c.verdict == crate::verdict::Verdict::Partial;
    for p in c.profiles.iter().filter(|p| p.decides()) {
        let verdict = match (partial, p.certified, p.denying == 0) {
            (true, _, true) => "partial: ok",
            (true, _, false) => "partial: DENIED",
            (false, true, _) => "certified",
            (false, false, _) => "NOT CERTIFIED",
        };
        let rows: Vec<String> = p.counts.iter().map(|(d, n)| format!("{n} {d}")).collect();
        out.push(format!(
            "  {:<16} {:<14} {:<12} {:>9}  {}{}",
            p.id,
            verdict,
            p.tier.map_or("-", |t| t.as_str()),
            p.witnesses,
            rows.join(", "),
            if p.reason.is_empty() {
                String::new()
            } else {
                format!(" ({})", one_line(&p.reason))
            }
        ));
    }
    let unclaimed: Vec<&str> = c
        .profiles
        .iter()
        .filter(|p| !p.claimed && !p.counts.is_empty())
        .map(|p| p.id.as_str())
        .collect();
    let not_run: Vec<&str> = c
        .profiles
        .iter()
        .filter(|p| p.counts.is_empty())
        .map(|p| p.id.as_str())
        .collect();
    if !not_run.is_empty() {
        out.push(format!(
            "  not judged in this run (no scenario of theirs ran): {}",
            not_run.join(", ")
        ));
    }
    if !unclaimed.is_empty() {
        out.push(format!(
            "  not claimed (the host does not advertise them): {}",
            unclaimed.join(", ")
        ));
    }
    let unmeasurable: Vec<&str> = c
        .profiles
        .iter()
        .filter(|p| p.extension_only)
        .map(|p| p.id.as_str())
        .collect();
    if !unmeasurable.is_empty() {
        out.push(format!(
            "  not measurable through the upstream contract here (every applicable row needs a toolcert extension): {}",
            unmeasurable.join(", ")
        ));
    }
    for p in c.profiles.iter().filter(|p| p.claimed && p.tentative) {
        let rows: Vec<String> = p.counts.iter().map(|(d, n)| format!("{n} {d}")).collect();
        out.push(format!(
            "  tentative (draft, measured, not scored): {}: {}",
            p.id,
            rows.join(", ")
        ));
    }
    out
}

/// One line per row to fix: failures, warnings, errors and flaky rows one each; blocked rows
/// grouped by what they miss; rows only extensions could witness grouped by extension.
fn rows_to_fix(suite: &Suite, run: &RunOutcome) -> Vec<String> {
    let c = &run.certification;
    let mut singles = Vec::new();
    let mut blocked: BTreeMap<String, (String, Vec<&str>)> = BTreeMap::new();
    let mut extensions: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    let mut tentative_blocked = 0usize;
    for r in &run.rows {
        let standing = c.standing(&r.requirement_id);
        let kind = standing.map_or(Standing::Scored, |s| s.standing);
        let denies = standing.is_some_and(|s| s.denies);
        match r.disposition {
            Disposition::Pass if denies => singles.push(format!(
                "  below tier {:<13} {}",
                r.requirement_id,
                one_line(standing.map_or("", |s| s.why.as_str()))
            )),
            Disposition::Pass => {}
            Disposition::Inapplicable if denies => singles.push(format!(
                "  inapplicable {:<13} {} (--strict: a claimed profile's row must apply)",
                r.requirement_id,
                one_line(&r.detail)
            )),
            Disposition::Inapplicable => {}
            Disposition::Blocked if kind == Standing::Tentative => tentative_blocked += 1,
            Disposition::Blocked if kind == Standing::NeedsExtension => {
                extensions
                    .entry(r.needs.join(", "))
                    .or_default()
                    .push(&r.requirement_id);
            }
            Disposition::Blocked => {
                let missing = missing_surfaces(suite, r);
                if missing.is_empty() {
                    singles.push(format!(
                        "  blocked      {:<13} {}{}",
                        r.requirement_id,
                        one_line(&r.detail),
                        note(kind, denies)
                    ));
                } else {
                    let key = missing.join(", ");
                    let how = missing
                        .iter()
                        .map(|id| {
                            suite.surfaces.get(id).map_or(String::new(), |s| {
                                format!("{} ({}): {}", id, s.kind.describe(), s.provide)
                            })
                        })
                        .collect::<Vec<_>>()
                        .join("; ");
                    blocked
                        .entry(key)
                        .or_insert_with(|| (how, Vec::new()))
                        .1
                        .push(&r.requirement_id);
                }
            }
            d => singles.push(format!(
                "  {:<12} {:<13} {}{}",
                d.as_str(),
                r.requirement_id,
                one_line(&r.detail),
                note(kind, denies)
            )),
        }
    }
    let mut out = Vec::new();
    if !singles.is_empty() || !blocked.is_empty() || !extensions.is_empty() {
        out.push("rows to look at:".to_string());
    }
    out.extend(singles);
    for (how, rows) in blocked.values() {
        out.push(format!(
            "  blocked      {} — missing {}",
            rows.join(", "),
            clip(how, REASON_CHARS * 2)
        ));
    }
    for (needs, rows) in &extensions {
        out.push(format!(
            "  not scored   {} — only toolcert extensions witness these here ({needs}; docs/reference/host-extensions.md)",
            rows.join(", ")
        ));
    }
    if tentative_blocked > 0 {
        out.push(format!(
            "  not scored   {tentative_blocked} tentative rows blocked (draft rules; --include-tentative scores them)"
        ));
    }
    out
}

/// What a row's standing adds to its line.
fn note(kind: Standing, denies: bool) -> &'static str {
    match (kind, denies) {
        (Standing::Tentative, _) => " [tentative: not scored]",
        (Standing::Incomplete, false) => " [partial: left to the whole run]",
        _ => "",
    }
}

/// The surfaces a blocked row's deciding scenario declares and its reason names: what the
/// host lacks (read from toolcert's own reason and scenario data, never from host text alone).
fn missing_surfaces(suite: &Suite, r: &RowVerdict) -> Vec<String> {
    let Some(s) = suite.scenario(&r.scenario_id) else {
        return Vec::new();
    };
    s.surfaces
        .iter()
        .filter(|id| r.detail.contains(id.as_str()))
        .cloned()
        .collect()
}

/// One line of at most [`REASON_CHARS`] characters, without control characters.
fn one_line(text: &str) -> String {
    clip(text, REASON_CHARS)
}

fn clip(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let flat = flat.trim();
    if flat.chars().count() <= max {
        return flat.to_string();
    }
    let mut cut: String = flat.chars().take(max).collect();
    cut.push('…');
    cut
}

/// The baseline's account: which rows were expected, which passed unexpectedly, regressed or
/// are stale, and whether the gate holds.
pub fn print_judgement(j: &crate::baseline::Judgement, strict: bool) {
    let rows = |list: &[crate::baseline::Judged]| -> String {
        list.iter()
            .map(|x| format!("{} (expected {}, got {})", x.row, x.expected, x.actual))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let ids = |list: &[crate::baseline::Expectation]| -> String {
        list.iter()
            .map(|x| x.row.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "toolcert: baseline: {} expected, {} unexpected passes, {} regressions, {} stale{}, {} not judged in this run",
        j.expected.len(),
        j.unexpected_passes.len(),
        j.regressions.len(),
        j.stale.len(),
        if strict {
            ""
        } else {
            " (they fail only under --strict)"
        },
        j.not_judged.len()
    );
    if !j.expected.is_empty() {
        println!("toolcert: expected: {}", rows(&j.expected));
    }
    if !j.unexpected_passes.is_empty() {
        println!(
            "toolcert: unexpected passes (update the baseline: `toolcert baseline REPORT`): {}",
            rows(&j.unexpected_passes)
        );
    }
    if !j.regressions.is_empty() {
        println!("toolcert: regressions: {}", rows(&j.regressions));
    }
    if !j.stale.is_empty() {
        println!(
            "toolcert: stale entries (no such row, or no scenario covers it): {}",
            ids(&j.stale)
        );
    }
}
