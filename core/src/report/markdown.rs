//! The human certification report (`--markdown PATH`): verdict, summary per family, then every
//! non-pass row with its reason, then what the suite does not cover yet.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::json::Report;
use crate::verdict::{Disposition, Evidence, Standing};

/// Text fit for one Markdown table cell or list item: one line (no line break or other
/// control character, `\r` included), no pipes, and no HTML a host could smuggle into the
/// report (`<script>` stays text).
fn cell(text: &str) -> String {
    text.replace(char::is_control, " ")
        .replace('|', "\\|")
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Render the Markdown report.
pub fn render_markdown(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# toolcert certification report\n");
    let _ = writeln!(
        out,
        "- Host: `{}`{}",
        report.host["baseUrl"].as_str().unwrap_or(""),
        match (
            report.host["mutant"].as_str(),
            report.host["upstreamOnly"].as_bool().unwrap_or(false)
        ) {
            (Some(m), true) => format!(" (reference host, upstream-only, mutant `{m}`)"),
            (Some(m), false) => format!(" (reference host, mutant `{m}`)"),
            (None, true) => " (reference host, upstream-only)".to_string(),
            (None, false) => String::new(),
        }
    );
    if let Some(sha) = report.host["discovery"]["sha256"].as_str() {
        let _ = writeln!(
            out,
            "- Discovery: wire major {} ({}), SHA-256 `{sha}`",
            report.host["discovery"]["wireMajor"],
            cell(
                report.host["discovery"]["wireReason"]
                    .as_str()
                    .unwrap_or("")
            )
        );
    } else if let Some(e) = report.host["discovery"]["error"].as_str() {
        let _ = writeln!(out, "- Discovery failed: {}", cell(e));
    }
    let _ = writeln!(
        out,
        "- toolcert {} (suite {}), seed {}, strict: {}",
        report.toolcert_version, report.suite_version, report.seed, report.strict
    );
    if let Some(r) = &report.repeat {
        let seeds: Vec<String> = r.seeds.iter().map(u64::to_string).collect();
        let _ = writeln!(
            out,
            "- Repeat: {} trials per scenario (pass^k: a row passes only if it passed in every trial; `flaky` if only in some), trial seeds {}",
            r.trials,
            seeds.join(", ")
        );
    }
    let c = &report.certification;
    let _ = writeln!(
        out,
        "- Verdict: **{}** ({} rows judged in {} scenarios; {} rows not covered yet)",
        cell(&c.final_line()),
        report.rows.len(),
        report.summary["scenarios"],
        report.uncovered.len()
    );
    let _ = writeln!(
        out,
        "- Asked: evidence tier {} or stronger; tentative rows {}; strict: {}\n",
        c.options.require_evidence,
        if c.options.include_tentative {
            "scored (--include-tentative)"
        } else {
            "measured, not scored"
        },
        c.options.strict
    );
    profiles_section(&mut out, c);

    let _ = writeln!(out, "## Summary per family\n");
    let names: Vec<&str> = Disposition::ALL.iter().map(|d| d.as_str()).collect();
    let _ = writeln!(out, "| family | {} |", names.join(" | "));
    let _ = writeln!(out, "|---|{}", "---|".repeat(names.len()));
    // The pass column says at which evidence level the rows held: `3 (2 double, 1 wire)`.
    let mut families: BTreeMap<&str, BTreeMap<Disposition, usize>> = BTreeMap::new();
    for r in &report.rows {
        *families
            .entry(r.verdict.family.as_str())
            .or_default()
            .entry(r.verdict.disposition)
            .or_default() += 1;
    }
    for (family, counts) in &families {
        let cells: Vec<String> = Disposition::ALL
            .iter()
            .map(|d| {
                let n = counts.get(d).copied().unwrap_or(0);
                if *d != Disposition::Pass || n == 0 {
                    return n.to_string();
                }
                let at = |e: Evidence| {
                    report
                        .rows
                        .iter()
                        .filter(|r| {
                            r.verdict.family == *family
                                && r.verdict.disposition == Disposition::Pass
                                && r.verdict.evidence == Some(e)
                        })
                        .count()
                };
                format!(
                    "{n} ({} double, {} wire, {} self-report)",
                    at(Evidence::Double),
                    at(Evidence::Wire),
                    at(Evidence::SelfReport)
                )
            })
            .collect();
        let _ = writeln!(out, "| {family} | {} |", cells.join(" | "));
    }

    let non_pass: Vec<_> = report
        .rows
        .iter()
        .filter(|r| r.verdict.disposition != Disposition::Pass)
        .collect();
    let _ = writeln!(out, "\n## Rows that did not pass\n");
    if non_pass.is_empty() {
        let _ = writeln!(out, "None: every judged row passed.");
    }
    // Blocked and error first: they make a pass meaningless elsewhere.
    let mut ordered = non_pass;
    ordered.sort_by_key(|r| std::cmp::Reverse(r.verdict.disposition.severity()));
    for r in ordered {
        let v = &r.verdict;
        let standing = match c.standing(&v.requirement_id) {
            Some(s) if s.denies => "denies certification".to_string(),
            Some(s) => match s.standing {
                Standing::Tentative => "tentative (a draft's rule): not scored".to_string(),
                Standing::NeedsExtension => format!(
                    "not scored: only toolcert extensions witness it here ({})",
                    v.needs.join(", ")
                ),
                Standing::Incomplete => "partial run: left to the whole run".to_string(),
                Standing::Scored => "does not deny certification".to_string(),
            },
            None => String::new(),
        };
        let _ = writeln!(
            out,
            "### {} — {} ({:?})\n\n- Rule ({}): {}\n- Scenario: `{}`\n- Standing: {}\n- Reason: {}\n",
            v.requirement_id,
            v.disposition,
            v.level,
            r.source,
            r.rule,
            v.scenario_id,
            standing,
            cell(&v.detail)
        );
        if let (Some(trials), Some(passes)) = (v.trials, v.passes) {
            let _ = writeln!(
                out,
                "- Trials: passed {passes} of {trials} (pass^k: {})\n",
                if v.pass_k == Some(true) { "yes" } else { "no" }
            );
        }
    }
    let passed: Vec<_> = report
        .rows
        .iter()
        .filter(|r| r.verdict.disposition == Disposition::Pass)
        .collect();
    let _ = writeln!(out, "\n## Rows that passed\n");
    if passed.is_empty() {
        let _ = writeln!(out, "None.");
    } else {
        let _ = writeln!(
            out,
            "`double`: counted at a double toolcert owns; `wire`: the host's answer to toolcert's own request, judged by toolcert; `self-report`: the host's own account of itself, which acquits at that tier only.\n"
        );
        let _ = writeln!(out, "| row | evidence | scenario | note |");
        let _ = writeln!(out, "|---|---|---|---|");
        for r in passed {
            let v = &r.verdict;
            let _ = writeln!(
                out,
                "| {} | {} | `{}` | {} |",
                v.requirement_id,
                v.evidence.map_or("?", |e| e.as_str()),
                v.scenario_id,
                match (v.passes, v.trials) {
                    (Some(p), Some(k)) => format!("passed {p} of {k} trials; {}", cell(&v.detail)),
                    _ => cell(&v.detail),
                }
            );
        }
    }
    if let Some(e) = &report.expectations {
        baseline_section(&mut out, e, report.strict);
    }
    if let Some(p) = &report.partition {
        let _ = writeln!(
            out,
            "\nThis report covers shard {p} of the scenarios (`--partition`); `toolcert merge` joins the shards.\n"
        );
    }
    let _ = writeln!(out, "\n## Not covered by a scenario yet\n");
    if report.uncovered.is_empty() {
        let _ = writeln!(out, "None.");
    } else {
        let _ = writeln!(out, "{}", report.uncovered.join(", "));
    }
    out
}

/// The profile table: each claimed profile's verdict, tier and witnesses, then the unclaimed.
fn profiles_section(out: &mut String, c: &crate::verdict::Certification) {
    let _ = writeln!(out, "## Profiles\n");
    let _ = writeln!(out, "| profile | verdict | tier | witnesses | rows | why |");
    let _ = writeln!(out, "|---|---|---|---|---|---|");
    for p in c.profiles.iter().filter(|p| p.claimed) {
        let rows: Vec<String> = p.counts.iter().map(|(d, n)| format!("{n} {d}")).collect();
        let verdict = if p.tentative {
            "tentative (not scored)"
        } else if p.extension_only {
            "not measurable here (needs toolcert extensions)"
        } else if c.verdict == crate::verdict::Verdict::Partial {
            if p.denying == 0 {
                "partial run: no row denies"
            } else {
                "partial run: denied"
            }
        } else if p.certified {
            "certified"
        } else {
            "not certified"
        };
        let _ = writeln!(
            out,
            "| {} | {verdict} | {} | {} | {} | {} |",
            p.id,
            p.tier.map_or("—", |t| t.as_str()),
            p.witnesses,
            rows.join(", "),
            cell(&p.reason)
        );
    }
    let unclaimed: Vec<&str> = c
        .profiles
        .iter()
        .filter(|p| !p.claimed)
        .map(|p| p.id.as_str())
        .collect();
    if !unclaimed.is_empty() {
        let _ = writeln!(
            out,
            "\nNot claimed (the host does not advertise them): {}.",
            unclaimed.join(", ")
        );
    }
    let _ = writeln!(out);
}

/// The expectation baseline: the gate, then each list.
fn baseline_section(out: &mut String, e: &crate::baseline::Judgement, strict: bool) {
    let _ = writeln!(out, "\n## Expectation baseline\n");
    let _ = writeln!(
        out,
        "Gate: **{}** ({} expected, {} unexpected passes, {} regressions, {} stale{}, {} not judged in this run)\n",
        if e.gate_passed { "passed" } else { "failed" },
        e.expected.len(),
        e.unexpected_passes.len(),
        e.regressions.len(),
        e.stale.len(),
        if strict {
            ""
        } else {
            ", failing only under --strict"
        },
        e.not_judged.len()
    );
    let lists = [
        ("Expected (do not fail the gate)", &e.expected),
        (
            "Unexpected passes (better than expected: update the baseline)",
            &e.unexpected_passes,
        ),
        ("Regressions (worse than expected)", &e.regressions),
    ];
    for (title, list) in lists {
        if list.is_empty() {
            continue;
        }
        let _ = writeln!(out, "### {title}\n");
        let _ = writeln!(out, "| row | expected | actual | reason |");
        let _ = writeln!(out, "|---|---|---|---|");
        for j in list {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                cell(&j.row),
                j.expected,
                j.actual,
                cell(&j.reason)
            );
        }
        let _ = writeln!(out);
    }
    if !e.stale.is_empty() {
        let _ = writeln!(
            out,
            "### Stale entries (no such row, or no scenario covers it)\n"
        );
        for x in &e.stale {
            let _ = writeln!(
                out,
                "- {} (expected {}): {}",
                cell(&x.row),
                x.disposition,
                cell(&x.reason)
            );
        }
    }
}
