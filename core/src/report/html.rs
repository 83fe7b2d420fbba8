//! The HTML report (`--html PATH`): one self-contained page rendered from the sealed JSON
//! report value (the very value `--report` writes), so the two can never disagree.
//!
//! - No network: no external stylesheet, script, font or image; a Content-Security-Policy
//!   `<meta>` allows nothing but the page's own `<style>` and `<script>`, by their SHA-256, so
//!   even a host string that escaped [`escape`] could not run.
//! - Every string from the report passes [`escape`] (host-supplied text above all: details,
//!   transcript bodies, headers, the discovery reason), after the run's [`Redactor`].
//! - Readable with JavaScript off: every row, check and exchange is in the markup; the
//!   script only filters. The filter state is the URL fragment
//!   (`#disposition=fail&family=HOOKS`), applied on load and on every change, so a filtered
//!   view is a link.
//! - Dispositions are rendered generically: any disposition string a row carries gets a
//!   filter chip, a count and a column, so a new one needs no change here.
//! - Bounded: each body shown is cut at [`MAX_BODY_CHARS`], and once the transcripts have
//!   used [`MAX_TRANSCRIPT_BYTES`] the remaining exchanges are listed by count only (the JSON
//!   report keeps them).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use base64::Engine as _;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::verdict::Disposition;
use toolcert_base::redact::Redactor;

/// The most characters of one request or response body the page shows (pretty-printed); the
/// rest is in the JSON report.
pub const MAX_BODY_CHARS: usize = 8 * 1024;

/// The most bytes of markup all transcripts together may take (4 MiB): past it an exchange
/// is counted, not shown, so a host answering with the largest bodies the transcript keeps
/// cannot make the page unreadably large.
pub const MAX_TRANSCRIPT_BYTES: usize = 4 * 1024 * 1024;

/// `text` as HTML text or a double- or single-quoted attribute value: `&`, `<`, `>`, `"` and
/// `'` become character references, and control characters other than tab and line feed
/// become their visible Control Pictures (`␛` for ESC), C1 controls U+FFFD, so a host's
/// terminal escapes show as what they are.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' => out.push(c),
            '\u{0}'..='\u{1f}' => {
                out.push(char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}'));
            }
            '\u{7f}' => out.push('\u{2421}'),
            '\u{80}'..='\u{9f}' => out.push('\u{fffd}'),
            _ => out.push(c),
        }
    }
    out
}

/// `text` scrubbed by the run's redactor, then escaped: how every string reaches the page.
fn esc(r: &Redactor, text: &str) -> String {
    escape(&r.text(text))
}

/// toolcert's own text (a check's id and words, a row's rule and source, a scenario's title)
/// scrubbed of whole secrets ([`Redactor::label`]), then escaped: no excerpt ever cut it, so
/// an id that ends like a token's first letters stays readable.
fn esc_label(r: &Redactor, text: &str) -> String {
    escape(&r.label(text))
}

/// The stylesheet (hashed into the CSP).
const STYLE: &str = r#"
:root{color-scheme:light;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;font-size:15px;line-height:1.4}
body{margin:0 auto;max-width:1200px;padding:1rem 1.5rem;color:#1b1f24;background:#fff}
h1{font-size:1.6rem;margin:.2rem 0}h2{font-size:1.25rem;margin-top:1.6rem;border-bottom:1px solid #d0d7de}
code,pre{font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,monospace;font-size:.85rem}
pre{background:#f6f8fa;padding:.5rem;overflow:auto;max-height:24rem;white-space:pre-wrap;word-break:break-all;margin:.3rem 0}
table{border-collapse:collapse;margin:.4rem 0}th,td{border:1px solid #d0d7de;padding:.2rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}
.verdict{font-size:1.3rem;font-weight:700;padding:.4rem .8rem;display:inline-block;border-radius:6px}
.verdict.yes{background:#dafbe1;color:#116329}.verdict.no{background:#ffebe9;color:#a40e26}
dl.meta{display:grid;grid-template-columns:max-content auto;gap:.1rem 1rem;margin:.6rem 0}dl.meta dt{font-weight:600}dl.meta dd{margin:0;word-break:break-all}
nav.filters{position:sticky;top:0;background:#fff;padding:.4rem 0;border-bottom:1px solid #d0d7de;z-index:1}
.group{margin:.2rem 0}.group>span{display:inline-block;min-width:6rem;font-weight:600}
a.chip{display:inline-block;margin:.1rem .15rem;padding:.1rem .55rem;border:1px solid #d0d7de;border-radius:1rem;text-decoration:none;color:inherit}
a.chip[aria-pressed=true]{background:#0969da;color:#fff;border-color:#0969da}
.badge{display:inline-block;min-width:5.5rem;text-align:center;border-radius:4px;padding:0 .3rem;font-weight:600;background:#eaeef2}
.d-pass{background:#dafbe1;color:#116329}.d-warn{background:#fff8c5;color:#7d4e00}.d-inapplicable{background:#eaeef2;color:#57606a}
.d-blocked{background:#fbefff;color:#6e40c9}.d-fail{background:#ffebe9;color:#a40e26}.d-error{background:#ffd8b5;color:#762c00}.d-flaky{background:#fff1e5;color:#953800}
article{border:1px solid #d0d7de;border-radius:6px;margin:.35rem 0;padding:.1rem .6rem}
article>details>summary{cursor:pointer;padding:.25rem 0}
.rule{margin:.3rem 0}.muted{color:#57606a}
[hidden]{display:none!important}
"#;

/// The filter script (hashed into the CSP). It reads `#disposition=…&family=…`, hides the
/// rows that do not match (the `hidden` attribute), hides the scenarios none of whose
/// shown rows name them, updates the shown count and points every chip at the state it
/// selects. A fragment without `=` is a plain anchor and leaves the filters as they are.
const SCRIPT: &str = r#"
(function(){
var rows=[].slice.call(document.querySelectorAll('article.row'));
var scenarios=[].slice.call(document.querySelectorAll('article.scenario'));
var chips=[].slice.call(document.querySelectorAll('a.chip'));
var keys=['disposition','family'];
function parse(){
var h=location.hash.slice(1),s={disposition:'',family:''};
if(h===''){return s;}
if(h.indexOf('=')<0){return null;}
h.split('&').forEach(function(p){var i=p.indexOf('=');if(i<0){return;}
var k=decodeURIComponent(p.slice(0,i));if(keys.indexOf(k)>=0){s[k]=decodeURIComponent(p.slice(i+1));}});
return s;}
function link(s){var p=[];keys.forEach(function(k){if(s[k]){p.push(k+'='+encodeURIComponent(s[k]));}});return '#'+p.join('&');}
function apply(){
var s=parse();if(s===null){return;}
var shown=0,used={};
rows.forEach(function(r){
var ok=(!s.disposition||r.getAttribute('data-disposition')===s.disposition)&&(!s.family||r.getAttribute('data-family')===s.family);
r.hidden=!ok;
if(ok){shown++;(r.getAttribute('data-scenarios')||'').split(' ').forEach(function(x){used[x]=true;});}});
scenarios.forEach(function(e){e.hidden=!used[e.getAttribute('data-scenario')];});
var n=document.getElementById('shown');n.textContent=String(shown);n.setAttribute('data-shown',String(shown));
document.body.setAttribute('data-filter-disposition',s.disposition);
document.body.setAttribute('data-filter-family',s.family);
chips.forEach(function(c){var f=c.getAttribute('data-filter'),v=c.getAttribute('data-value'),t={disposition:s.disposition,family:s.family};
t[f]=v;c.setAttribute('href',link(t));c.setAttribute('aria-pressed',String(s[f]===v));});}
window.addEventListener('hashchange',apply);
apply();
})();
"#;

/// `'sha256-…'` of a CSP hash source.
fn csp_hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// The page's Content-Security-Policy: nothing from anywhere but its own style and script.
pub fn content_security_policy() -> String {
    format!(
        "default-src 'none'; style-src {}; script-src {}; img-src 'none'; font-src 'none'; connect-src 'none'; form-action 'none'; base-uri 'none'",
        csp_hash(STYLE),
        csp_hash(SCRIPT)
    )
}

/// A string member, or `""`.
fn s<'v>(v: &'v Value, key: &str) -> &'v str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A JSON value as text for a cell: strings as they are, the rest compact JSON.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Every disposition the page knows: the suite's, in their order, then any other a row
/// carries (sorted), so a disposition added later still gets a chip and a column.
fn dispositions(rows: &[Value]) -> Vec<String> {
    let mut out: Vec<String> = Disposition::ALL
        .iter()
        .map(|d| d.as_str().to_string())
        .collect();
    let extra: BTreeSet<&str> = rows
        .iter()
        .map(|r| s(r, "disposition"))
        .filter(|d| !d.is_empty() && !out.iter().any(|k| k == d))
        .collect();
    out.extend(extra.into_iter().map(str::to_string));
    out
}

/// The profile table: each claimed profile's verdict, tier, witnesses and reason.
fn profiles_table(out: &mut String, r: &Redactor, certification: &Value) {
    let empty = Vec::new();
    let profiles = certification["profiles"].as_array().unwrap_or(&empty);
    let claimed: Vec<&Value> = profiles
        .iter()
        .filter(|p| p["claimed"].as_bool() == Some(true))
        .collect();
    if claimed.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<table id=\"profiles\"><thead><tr><th>profile</th><th>verdict</th><th>tier</th><th>witnesses</th><th>why</th></tr></thead><tbody>"
    );
    for p in claimed {
        let verdict = if p["tentative"].as_bool() == Some(true) {
            "tentative (not scored)"
        } else if p["extensionOnly"].as_bool() == Some(true) {
            "not measurable here (needs toolcert extensions)"
        } else if certification["verdict"] == "partial" {
            if p["denying"].as_u64().unwrap_or(0) == 0 {
                "partial run: no row denies"
            } else {
                "partial run: denied"
            }
        } else if p["certified"].as_bool() == Some(true) {
            "certified"
        } else {
            "not certified"
        };
        let _ = writeln!(
            out,
            "<tr data-profile=\"{}\"><td>{}</td><td>{verdict}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(r, s(p, "id")),
            esc(r, s(p, "title")),
            esc(r, p["tier"].as_str().unwrap_or("—")),
            p["witnesses"].as_u64().unwrap_or(0),
            esc(r, s(p, "reason"))
        );
    }
    let _ = writeln!(out, "</tbody></table>");
}

/// Render the HTML report from the JSON report value. Every string shown passes `redactor`,
/// then [`escape`]: string by string, never the value's keys as a whole (the redactor scrubs
/// the head of a token where a string ends, which would turn the report's own `host` key into
/// `[redacted]` when a token starts with `host`).
pub fn render_html(report: &Value, redactor: &Redactor) -> String {
    let r = redactor;
    let empty = Vec::new();
    let rows = report["rows"].as_array().unwrap_or(&empty);
    let scenarios = report["scenarios"].as_array().unwrap_or(&empty);
    let summary = &report["summary"];
    let certified = summary["certified"].as_bool().unwrap_or(false);
    let kinds = dispositions(rows);
    let families: BTreeSet<&str> = rows.iter().map(|r| s(r, "family")).collect();
    let count = |d: &str, family: Option<&str>| {
        rows.iter()
            .filter(|r| s(r, "disposition") == d && family.is_none_or(|f| s(r, "family") == f))
            .count()
    };

    let mut out = String::with_capacity(256 * 1024);
    let host = s(&report["host"], "baseUrl");
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <title>toolcert report: {}</title>\n<style>{STYLE}</style></head>\n\
         <body data-filter-disposition=\"\" data-filter-family=\"\">\n",
        esc(r, &content_security_policy()),
        esc(r, host)
    );
    let _ = writeln!(out, "<header><h1>toolcert certification report</h1>");
    let headline = report["certification"]["headline"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| {
            if certified {
                "Certified".into()
            } else {
                "Not certified".into()
            }
        });
    let final_line = match report["certification"]["gate"].as_bool() {
        Some(true) => format!("gate passed (the baseline accepts this run; {headline})"),
        Some(false) => format!("gate FAILED ({headline})"),
        None => headline,
    };
    let _ = writeln!(
        out,
        "<p id=\"verdict\" class=\"verdict {}\" data-certified=\"{certified}\" data-verdict=\"{}\">{}</p>",
        if certified { "yes" } else { "no" },
        esc(r, s(&report["certification"], "verdict")),
        esc(r, &final_line)
    );
    profiles_table(&mut out, r, &report["certification"]);
    header_meta(&mut out, r, report);
    let _ = writeln!(out, "</header>");

    // Filters: links to fragments, so they are plain anchors without JavaScript.
    let _ = writeln!(
        out,
        "<nav class=\"filters\" aria-label=\"filters\">\n<div class=\"group\" id=\"filter-disposition\"><span>Disposition</span>\
         <a class=\"chip\" href=\"#\" data-filter=\"disposition\" data-value=\"\" data-count=\"{}\" aria-pressed=\"true\">all <b>{}</b></a>",
        rows.len(),
        rows.len()
    );
    for d in &kinds {
        let n = count(d, None);
        let _ = writeln!(
            out,
            "<a class=\"chip\" href=\"#disposition={d}\" data-filter=\"disposition\" data-value=\"{d}\" data-count=\"{n}\" aria-pressed=\"false\">{d} <b>{n}</b></a>",
            d = esc(r, d)
        );
    }
    let _ = writeln!(
        out,
        "</div>\n<div class=\"group\" id=\"filter-family\"><span>Family</span>\
         <a class=\"chip\" href=\"#\" data-filter=\"family\" data-value=\"\" data-count=\"{}\" aria-pressed=\"true\">all <b>{}</b></a>",
        rows.len(),
        rows.len()
    );
    for f in &families {
        let n = rows.iter().filter(|r| s(r, "family") == *f).count();
        let _ = writeln!(
            out,
            "<a class=\"chip\" href=\"#family={f}\" data-filter=\"family\" data-value=\"{f}\" data-count=\"{n}\" aria-pressed=\"false\">{f} <b>{n}</b></a>",
            f = esc(r, f)
        );
    }
    let _ = writeln!(
        out,
        "</div>\n<p class=\"muted\">Showing <b id=\"shown\" data-shown=\"{n}\">{n}</b> of {n} rows.\
         <noscript> Filters need JavaScript; every row is shown.</noscript></p>\n</nav>",
        n = rows.len()
    );

    family_table(&mut out, r, rows, &kinds, &families, &count);
    if let Some(e) = report.get("expectations").filter(|e| e.is_object()) {
        baseline_section(&mut out, r, e, report["strict"].as_bool().unwrap_or(false));
    }
    if let Some(p) = report.get("partition").filter(|p| !p.is_null()) {
        let _ = writeln!(
            out,
            "<p id=\"partition\">This report covers shard <code>{}</code> of the scenarios (<code>--partition</code>); <code>toolcert merge</code> joins the shards.</p>",
            esc(r, &plain_partition(p))
        );
    }

    let by_id: BTreeMap<&str, &Value> = scenarios
        .iter()
        .map(|sc| (s(sc, "scenarioId"), sc))
        .collect();
    let _ = writeln!(out, "<h2 id=\"rows\">Rows</h2>\n<section id=\"row-list\">");
    for row in rows {
        row_article(&mut out, r, row, &by_id);
    }
    let _ = writeln!(out, "</section>");

    let _ = writeln!(
        out,
        "<h2 id=\"scenarios\">Scenarios and transcripts</h2>\n<p class=\"muted\">Each exchange carries a <code>curl</code> command that repeats it; tokens are replaced by <code>$TOKEN</code> (set it to the role's token).</p>\n<section id=\"scenario-list\">"
    );
    let mut budget = MAX_TRANSCRIPT_BYTES;
    for sc in scenarios {
        scenario_article(&mut out, r, sc, rows, &mut budget);
    }
    let _ = writeln!(out, "</section>");

    let _ = writeln!(
        out,
        "<h2 id=\"uncovered\">Not covered by a scenario yet</h2>"
    );
    let uncovered: Vec<String> = report["uncovered"]
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .map(|u| esc(r, &plain(u)))
        .collect();
    if uncovered.is_empty() {
        let _ = writeln!(out, "<p>None.</p>");
    } else {
        let _ = writeln!(out, "<p>{}</p>", uncovered.join(", "));
    }
    let _ = writeln!(
        out,
        "<footer class=\"muted\"><p>Report digest (RFC 8785 + SHA-256): <code id=\"digest\">{}</code></p></footer>\n<script>{SCRIPT}</script>\n</body></html>",
        esc(r, s(report, "digest"))
    );
    out
}

/// `K/N` of a partition value (`{"index": K, "count": N}` or a string).
fn plain_partition(p: &Value) -> String {
    match (p.get("index"), p.get("count")) {
        (Some(k), Some(n)) => format!("{}/{}", plain(k), plain(n)),
        _ => plain(p),
    }
}

/// Host, discovery, versions, seed.
fn header_meta(out: &mut String, r: &Redactor, report: &Value) {
    let host = &report["host"];
    let mut items: Vec<(&str, String)> = vec![("Host", s(host, "baseUrl").to_string())];
    let mut notes = Vec::new();
    if host["embedded"].as_bool().unwrap_or(false) {
        notes.push("embedded reference host".to_string());
    }
    if let Some(m) = host["mutant"].as_str() {
        notes.push(format!("mutant {m}"));
    }
    if host["upstreamOnly"].as_bool().unwrap_or(false) {
        notes.push("upstream-only".to_string());
    }
    if !notes.is_empty() {
        items.push(("Host kind", notes.join(", ")));
    }
    let d = &host["discovery"];
    if let Some(sha) = d["sha256"].as_str() {
        items.push((
            "Discovery",
            format!(
                "wire major {} ({}), SHA-256 {sha}",
                plain(&d["wireMajor"]),
                s(d, "wireReason")
            ),
        ));
    } else if let Some(e) = d["error"].as_str() {
        items.push(("Discovery failed", e.to_string()));
    }
    items.push((
        "toolcert",
        format!(
            "{} (suite {})",
            s(report, "toolcertVersion"),
            s(report, "suiteVersion")
        ),
    ));
    items.push((
        "Seed, strict",
        format!("{}, {}", plain(&report["seed"]), plain(&report["strict"])),
    ));
    let summary = &report["summary"];
    items.push((
        "Judged",
        format!(
            "{} rows ({} measured) in {} scenarios; {} rows not covered yet; passes at double evidence {}, at wire {}",
            plain(&summary["rowsJudged"]),
            plain(&summary["rowsMeasured"]),
            plain(&summary["scenarios"]),
            plain(&summary["uncovered"]),
            plain(&summary["passEvidence"]["double"]),
            plain(&summary["passEvidence"]["wire"]),
        ),
    ));
    if let Some(level) = summary["requireEvidence"].as_str() {
        items.push(("Required evidence", level.to_string()));
    }
    items.push(("Generated", s(report, "generatedAt").to_string()));
    items.push(("Elapsed", format!("{} ms", plain(&summary["elapsedMs"]))));
    let _ = writeln!(out, "<dl class=\"meta\">");
    for (k, v) in items {
        let _ = writeln!(out, "<dt>{}</dt><dd>{}</dd>", esc(r, k), esc(r, &v));
    }
    let _ = writeln!(out, "</dl>");
}

/// Summary per family: one column per disposition; the pass cell says at which evidence.
fn family_table(
    out: &mut String,
    r: &Redactor,
    rows: &[Value],
    kinds: &[String],
    families: &BTreeSet<&str>,
    count: &dyn Fn(&str, Option<&str>) -> usize,
) {
    let _ = writeln!(
        out,
        "<h2 id=\"families\">Summary per family</h2>\n<table id=\"family-summary\"><thead><tr><th>family</th>"
    );
    for d in kinds {
        let _ = write!(out, "<th>{}</th>", esc(r, d));
    }
    let _ = writeln!(out, "</tr></thead><tbody>");
    let line = |out: &mut String, family: Option<&str>| {
        let name = family.unwrap_or("all");
        let _ = write!(
            out,
            "<tr data-family=\"{}\"><th>{}</th>",
            esc(r, name),
            esc(r, name)
        );
        for d in kinds {
            let n = count(d, family);
            let at = |e: &str| {
                rows.iter()
                    .filter(|r| {
                        s(r, "disposition") == d
                            && s(r, "evidence") == e
                            && family.is_none_or(|f| s(r, "family") == f)
                    })
                    .count()
            };
            let note = if d == "pass" && n > 0 {
                format!(" ({} double, {} wire)", at("double"), at("wire"))
            } else {
                String::new()
            };
            let _ = write!(
                out,
                "<td data-disposition=\"{}\" data-count=\"{n}\">{n}{note}</td>",
                esc(r, d)
            );
        }
        let _ = writeln!(out, "</tr>");
    };
    for f in families {
        line(out, Some(f));
    }
    line(out, None);
    let _ = writeln!(out, "</tbody></table>");
}

/// The members of a row this page shows in their own place; any other (a later format's
/// `passK`, say) is listed generically.
const ROW_KNOWN: &[&str] = &[
    "requirementId",
    "family",
    "disposition",
    "level",
    "evidence",
    "detail",
    "rule",
    "source",
    "scenarioId",
    "scenarios",
    "assertions",
];

/// One row: summary line, rule, reason, evidence, its checks and links to its scenarios.
fn row_article(out: &mut String, r: &Redactor, row: &Value, scenarios: &BTreeMap<&str, &Value>) {
    let id = s(row, "requirementId");
    let disposition = s(row, "disposition");
    let scenario_ids: Vec<String> = match row["scenarios"].as_array() {
        Some(list) => list.iter().map(plain).collect(),
        None => vec![s(row, "scenarioId").to_string()],
    };
    let _ = writeln!(
        out,
        "<article class=\"row\" id=\"row-{}\" data-row=\"{}\" data-disposition=\"{}\" data-family=\"{}\" data-scenarios=\"{}\">",
        esc(r, id),
        esc(r, id),
        esc(r, disposition),
        esc(r, s(row, "family")),
        esc(r, &scenario_ids.join(" "))
    );
    let evidence = s(row, "evidence");
    let _ = writeln!(
        out,
        "<details{}><summary><span class=\"badge d-{}\">{}</span> <code>{}</code> <span class=\"muted\">{} · {}{}</span></summary>",
        if disposition == "pass" { "" } else { " open" },
        esc(r, disposition),
        esc(r, disposition),
        esc(r, id),
        esc(r, s(row, "level")),
        esc(r, s(row, "family")),
        if evidence.is_empty() {
            String::new()
        } else {
            format!(" · evidence {}", esc(r, evidence))
        }
    );
    let _ = writeln!(
        out,
        "<p class=\"rule\"><b>Rule</b> (<cite>{}</cite>): {}</p>",
        esc_label(r, s(row, "source")),
        esc_label(r, s(row, "rule"))
    );
    let detail = s(row, "detail");
    if !detail.is_empty() {
        let _ = writeln!(
            out,
            "<p class=\"detail\"><b>Reason</b>: {}</p>",
            esc(r, detail)
        );
    }
    let _ = writeln!(
        out,
        "<p><b>Evidence</b>: <span class=\"evidence\">{}</span>; {} assertions</p>",
        esc(
            r,
            if evidence.is_empty() {
                "none"
            } else {
                evidence
            }
        ),
        esc(r, &plain(&row["assertions"]))
    );
    if let Some(map) = row.as_object() {
        let extra: Vec<_> = map
            .iter()
            .filter(|(k, _)| !ROW_KNOWN.contains(&k.as_str()))
            .collect();
        if !extra.is_empty() {
            let _ = writeln!(out, "<dl class=\"meta extra\">");
            for (k, v) in extra {
                let _ = writeln!(out, "<dt>{}</dt><dd>{}</dd>", esc(r, k), esc(r, &plain(v)));
            }
            let _ = writeln!(out, "</dl>");
        }
    }
    let _ = writeln!(
        out,
        "<table class=\"checks\"><thead><tr><th>status</th><th>check</th><th>says</th><th>evidence</th><th>detail</th><th>scenario</th></tr></thead><tbody>"
    );
    for sid in &scenario_ids {
        let Some(sc) = scenarios.get(sid.as_str()) else {
            continue;
        };
        for c in sc["checks"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            if s(c, "row") != id {
                continue;
            }
            let _ = writeln!(
                out,
                "<tr class=\"check\" data-status=\"{st}\"><td><span class=\"badge d-{st}\">{st}</span></td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td><a href=\"#scenario-{sid}\">{sid}</a></td></tr>",
                esc_label(r, s(c, "checkId")),
                esc_label(r, s(c, "says")),
                esc(r, s(c, "evidence")),
                esc(r, s(c, "detail")),
                st = esc(r, s(c, "status")),
                sid = esc(r, sid),
            );
        }
    }
    let _ = writeln!(out, "</tbody></table>\n</details></article>");
}

/// One scenario: its disposition, the rows it judges, and its transcript with `curl`
/// reproducers, within the page's transcript budget.
fn scenario_article(
    out: &mut String,
    r: &Redactor,
    sc: &Value,
    rows: &[Value],
    budget: &mut usize,
) {
    let id = s(sc, "scenarioId");
    let judged: Vec<&str> = rows
        .iter()
        .filter(|r| {
            r["scenarios"]
                .as_array()
                .is_some_and(|l| l.iter().any(|x| x.as_str() == Some(id)))
                || s(r, "scenarioId") == id
        })
        .map(|r| s(r, "requirementId"))
        .collect();
    let disposition = s(sc, "disposition");
    let exchanges = sc["transcript"]["exchanges"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let _ = writeln!(
        out,
        "<article class=\"scenario\" id=\"scenario-{}\" data-scenario=\"{}\" data-disposition=\"{}\">\n<details><summary><span class=\"badge d-{}\">{}</span> <code>{}</code> {} <span class=\"muted\">· {} exchanges · {} ms</span></summary>",
        esc(r, id),
        esc(r, id),
        esc(r, disposition),
        esc(r, disposition),
        esc(r, disposition),
        esc(r, id),
        esc_label(r, s(sc, "title")),
        exchanges.len(),
        esc(r, &plain(&sc["elapsedMs"]))
    );
    let links: Vec<String> = judged
        .iter()
        .map(|id| format!("<a href=\"#row-{id}\">{id}</a>", id = esc(r, id)))
        .collect();
    let _ = writeln!(out, "<p>Rows: {}</p>", links.join(", "));
    let dropped = sc["transcript"]["droppedExchanges"].as_u64().unwrap_or(0);
    let mut omitted = 0usize;
    for (i, x) in exchanges.iter().enumerate() {
        if *budget == 0 {
            omitted += 1;
            continue;
        }
        let before = out.len();
        exchange(out, r, x);
        *budget = budget.saturating_sub(out.len() - before);
        if i + 1 == crate::transcript::KEPT_HEAD && dropped > 0 {
            let _ = writeln!(
                out,
                "<p class=\"muted\">… {dropped} exchanges were not kept in the transcript here …</p>"
            );
        }
    }
    if omitted > 0 {
        let _ = writeln!(
            out,
            "<p class=\"muted omitted\">{omitted} more exchanges are left out of this page to keep it small; the JSON report has them.</p>"
        );
    }
    let _ = writeln!(out, "</details></article>");
}

/// One exchange: the line, the `curl` reproducer, headers and bodies.
fn exchange(out: &mut String, r: &Redactor, x: &Value) {
    let status = match &x["status"] {
        Value::Null => "no response".to_string(),
        v => plain(v),
    };
    let _ = writeln!(
        out,
        "<details class=\"exchange\"><summary><code>{} {}</code> → {} <span class=\"muted\">({}, {} ms)</span></summary>",
        esc(r, s(x, "method")),
        esc(r, s(x, "url")),
        esc(r, &status),
        esc(r, s(x, "step")),
        esc(r, &plain(&x["elapsedMs"]))
    );
    let _ = writeln!(
        out,
        "<pre class=\"curl\">{}</pre>",
        esc(r, &cut(s(x, "curl").to_string()))
    );
    if let Some(e) = x["transportError"].as_str() {
        let _ = writeln!(
            out,
            "<p class=\"transport-error\"><b>Transport error</b>: {}</p>",
            esc(r, e)
        );
    }
    for (title, key) in [
        ("Request headers", "requestHeaders"),
        ("Request body", "requestBody"),
        ("Response headers", "responseHeaders"),
        ("Response body", "responseBody"),
    ] {
        let v = &x[key];
        if v.is_null() || v.as_object().is_some_and(|m| m.is_empty()) {
            continue;
        }
        let text = serde_json::to_string_pretty(v).unwrap_or_default();
        let _ = writeln!(
            out,
            "<p class=\"muted\">{title}</p><pre>{}</pre>",
            esc(r, &cut(text))
        );
    }
    let _ = writeln!(out, "</details>");
}

/// `text` cut to [`MAX_BODY_CHARS`] characters, saying how much was left out.
fn cut(text: String) -> String {
    match text.char_indices().nth(MAX_BODY_CHARS) {
        None => text,
        Some((at, _)) => format!(
            "{}\n… {} more bytes in the JSON report",
            &text[..at],
            text.len() - at
        ),
    }
}

/// The expectation baseline: the gate, then each list.
fn baseline_section(out: &mut String, r: &Redactor, e: &Value, strict: bool) {
    let list = |key: &str| e[key].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let passed = e["gatePassed"].as_bool().unwrap_or(false);
    let _ = writeln!(
        out,
        "<h2 id=\"baseline\">Expectation baseline</h2>\n<p>Gate: <b id=\"gate\" data-passed=\"{passed}\">{}</b> ({} expected, {} unexpected passes, {} regressions, {} stale{}, {} not judged in this run)</p>",
        if passed { "passed" } else { "failed" },
        list("expected").len(),
        list("unexpectedPasses").len(),
        list("regressions").len(),
        list("stale").len(),
        if strict {
            ""
        } else {
            ", failing only under --strict"
        },
        list("notJudged").len()
    );
    for (title, key) in [
        ("Expected (do not fail the gate)", "expected"),
        (
            "Unexpected passes (better than expected: update the baseline)",
            "unexpectedPasses",
        ),
        ("Regressions (worse than expected)", "regressions"),
    ] {
        if list(key).is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "<h3>{title}</h3><table><thead><tr><th>row</th><th>expected</th><th>actual</th><th>reason</th></tr></thead><tbody>"
        );
        for j in list(key) {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(r, s(j, "row")),
                esc(r, s(j, "expected")),
                esc(r, s(j, "actual")),
                esc(r, s(j, "reason"))
            );
        }
        let _ = writeln!(out, "</tbody></table>");
    }
    if !list("stale").is_empty() {
        let _ = writeln!(
            out,
            "<h3>Stale entries (no such row, or no scenario covers it)</h3><ul>"
        );
        for x in list("stale") {
            let _ = writeln!(
                out,
                "<li>{} (expected {}): {}</li>",
                esc(r, s(x, "row")),
                esc(r, s(x, "disposition")),
                esc(r, s(x, "reason"))
            );
        }
        let _ = writeln!(out, "</ul>");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// Every `&` in `out` starts one of the references [`escape`] writes.
    fn references_only(out: &str) -> bool {
        out.match_indices('&').all(|(i, _)| {
            ["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"]
                .iter()
                .any(|r| out[i..].starts_with(r))
        })
    }

    fn unescape(out: &str) -> String {
        out.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&amp;", "&")
    }

    proptest! {
        #[test]
        fn escaped_text_has_no_markup_characters_and_reads_back(text in any::<String>()) {
            let out = escape(&text);
            prop_assert!(!out.contains(['<', '>', '"', '\'']), "{out:?}");
            prop_assert!(references_only(&out), "{out:?}");
            prop_assert!(
                !out.chars().any(|c| c.is_control() && c != '\n' && c != '\t'),
                "{out:?}"
            );
            if !text.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
                prop_assert_eq!(unescape(&out), text);
            }
        }

        #[test]
        fn markup_heavy_text_is_escaped(text in "[<>&\"' a-z=/;]{0,64}") {
            let out = escape(&text);
            prop_assert!(!out.contains(['<', '>', '"', '\'']), "{out:?}");
            prop_assert!(references_only(&out), "{out:?}");
            prop_assert_eq!(unescape(&out), text);
        }
    }

    const HOSTILE: &str = "<script>alert(1)</script><img src=x onerror=alert(2)>\"'&amp;\u{1b}[2J";

    fn crafted(body: Value) -> Value {
        json!({
            "digest": HOSTILE,
            "host": {"baseUrl": format!("http://127.0.0.1:1/{HOSTILE}"), "embedded": false,
                     "discovery": {"sha256": "ab", "wireMajor": 1, "wireReason": HOSTILE}},
            "summary": {"certified": false, "rowsJudged": 1},
            "rows": [{"requirementId": "HOOKS-1", "family": "HOOKS", "disposition": "fail",
                      "level": "MUST", "detail": HOSTILE, "rule": "r", "source": "s",
                      "scenarioId": "hooks.x", "scenarios": ["hooks.x"], "assertions": 1,
                      "passK": HOSTILE}],
            "scenarios": [{"scenarioId": "hooks.x", "title": HOSTILE, "disposition": "fail",
                "elapsedMs": 1,
                "checks": [{"row": "HOOKS-1", "checkId": "c", "says": HOSTILE, "status": "fail",
                            "detail": HOSTILE}],
                "transcript": {"exchanges": [{"step": HOSTILE, "method": "GET",
                    "url": format!("http://127.0.0.1:1/{HOSTILE}"), "requestHeaders": {},
                    "status": 500, "responseHeaders": {"x": HOSTILE}, "responseBody": body,
                    "elapsedMs": 1, "curl": format!("curl '{HOSTILE}' -H \"Authorization: Bearer $TOKEN\"")}]}}],
            "uncovered": [HOSTILE],
            "expectations": {"expected": [], "unexpectedPasses": [{"row": HOSTILE, "expected": "fail", "actual": "pass", "reason": HOSTILE}],
                             "regressions": [], "stale": [{"row": HOSTILE, "disposition": "fail", "reason": HOSTILE}],
                             "notJudged": [], "gatePassed": false},
        })
    }

    #[test]
    fn host_text_everywhere_stays_text() {
        let html = render_html(&crafted(json!({"$nonJson": HOSTILE})), &Redactor::default());
        // Ours is the only script and no host tag or attribute survives.
        assert_eq!(html.matches("<script").count(), 1, "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains('\u{1b}'));
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        // An unknown row member (a later format's) is shown, escaped.
        assert!(html.contains("<dt>passK</dt>"));
    }

    #[test]
    fn a_token_that_starts_like_a_report_key_leaves_the_page_whole() {
        // The redactor scrubs a token's head where a string ends: `host` of `hostile…`.
        let redactor = Redactor::new(vec!["hostileOP0123456789".into()], Vec::new());
        let html = render_html(&crafted(json!({})), &redactor);
        assert!(
            html.contains("<dt>Host</dt><dd>http://127.0.0.1:1/"),
            "{html}"
        );
        assert!(html.contains("<dt>Discovery</dt>"));
    }

    #[test]
    fn the_redactor_scrubs_every_string_shown() {
        let mut report = crafted(json!({"token": "sekrit-token-0123"}));
        report["rows"][0]["detail"] = json!("echoed Bearer sekrit-token-0123");
        let redactor = Redactor::new(vec!["sekrit-token-0123".into()], Vec::new());
        let html = render_html(&report, &redactor);
        assert!(!html.contains("sekrit"), "{html}");
        assert!(html.contains(toolcert_base::redact::REDACTED));
    }

    #[test]
    fn a_new_disposition_gets_a_chip_a_count_and_a_column() {
        let mut report = crafted(json!({}));
        report["rows"][0]["disposition"] = json!("flaky");
        let html = render_html(&report, &Redactor::default());
        assert!(html.contains("data-filter=\"disposition\" data-value=\"flaky\" data-count=\"1\""));
        assert!(html.contains("<th>flaky</th>"));
        assert!(html.contains("data-disposition=\"flaky\" data-count=\"1\""));
    }

    #[test]
    fn the_page_stays_bounded_whatever_the_transcripts_hold() {
        // 16 scenarios of 40 exchanges with 64 KiB bodies (40 MiB of transcript, ten times the
        // page's budget; the transcript bound allows far more, cut the same way).
        let body = json!({"blob": "y".repeat(crate::transcript::MAX_KEPT_BODY_BYTES - 16)});
        let mut report = crafted(body.clone());
        let one = report["scenarios"][0].clone();
        let x = one["transcript"]["exchanges"][0].clone();
        let mut sc = one;
        sc["transcript"]["exchanges"] = Value::Array(vec![x; 40]);
        report["scenarios"] = Value::Array(vec![sc; 16]);
        let html = render_html(&report, &Redactor::default());
        assert!(
            html.len() < MAX_TRANSCRIPT_BYTES + 2 * 1024 * 1024,
            "{} bytes",
            html.len()
        );
        assert!(html.contains("more exchanges are left out of this page"));
        assert!(html.contains("more bytes in the JSON report"));
    }

    #[test]
    fn the_csp_allows_exactly_the_page_s_own_style_and_script() {
        let csp = content_security_policy();
        assert!(csp.starts_with("default-src 'none'; "));
        assert!(csp.contains(&csp_hash(SCRIPT)) && csp.contains(&csp_hash(STYLE)));
        assert!(!csp.contains("unsafe"));
        let html = render_html(&crafted(json!({})), &Redactor::default());
        assert!(html.contains(&format!("<script>{SCRIPT}</script>")));
        assert!(html.contains(&format!("<style>{STYLE}</style>")));
        for fetch in ["http://", "https://", "//"] {
            let outside_text = html
                .match_indices(fetch)
                .filter(|(i, _)| {
                    let before = &html[..*i];
                    before.ends_with("src=\"") || before.ends_with("href=\"")
                })
                .count();
            assert_eq!(outside_text, 0, "{fetch}");
        }
    }
}
