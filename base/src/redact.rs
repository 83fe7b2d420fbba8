//! The one redactor every string leaving toolcert passes: reports (JSON, JUnit, Markdown), the
//! console, transcripts and their `curl` reproducers.
//!
//! It knows every bearer token of the run (flags and profile), every canary secret of the run
//! (one per scenario, derived up front, so a host that echoes one scenario's canary into
//! another's answers is caught too), and any `Bearer <value>` a host writes back. Tokens become
//! `[redacted]`; a canary becomes `[canary]`, so a check compared against one says so without
//! printing it.
//!
//! What is covered, for every secret (docs/guide/reports.md says the same):
//!
//! - the secret itself, in any ASCII letter case (an upper-cased echo), and reversed;
//! - its hex encoding (either case), and its base64 and base64url encodings, padded or not,
//!   also where the secret is part of a longer encoded value (`Basic base64(role:token)`):
//!   the characters of the encoding that depend only on the secret are matched at each of the
//!   three byte alignments;
//! - the secret split by characters a reader does not see: control characters (DEL
//!   included), zero-width and bidirectional formatting characters are skipped while matching,
//!   and the whole split span is replaced;
//! - a piece of a long secret: any run of at least `fragment_len` characters of a
//!   secret of 20 characters or more (a third of it, at least 12), wherever it appears, so a
//!   secret cut in two or three across adjacent fields, or quoted in part, goes too; and in one
//!   JSON value, a string that starts with the rest of a secret whose head ends another string
//!   of the value;
//! - the head of a secret that an excerpt cut off (the 512-character prefix of a non-JSON
//!   body, a value a check quotes up to 300 characters and `…`): a string that ends, or
//!   reaches an `…`, with the first [`CUT_OFF_MIN`] or more characters of a secret has them
//!   replaced, since half a token is still a leak.
//!
//! A host that transforms a secret in some other way (encrypts it, interleaves other
//! characters, spells it out) can defeat any redactor: redaction is a safety net for echoes,
//! not a guarantee against a host that means to exfiltrate.
//!
//! Every string of every observation passes here, so the secrets and their forms are compiled
//! once into Aho-Corasick automata and a string is scanned once per automaton, not once per
//! secret: a run has a canary per scenario, and scanning per secret was half of a run's CPU
//! time.

use std::borrow::Cow;
use std::sync::{Arc, LazyLock};

use aho_corasick::{AhoCorasick, MatchKind};
use base64::Engine as _;
use regex::Regex;
use serde_json::Value;

/// The marker that replaces a token.
pub const REDACTED: &str = "[redacted]";

/// The marker that replaces a canary secret.
pub const CANARY: &str = "[canary]";

/// The shortest head of a secret scrubbed where an excerpt ends (shorter ones say nothing
/// worth hiding, and would make ordinary text ending in a few common letters a false match).
pub const CUT_OFF_MIN: usize = 4;

/// Secrets at least this long are also matched by their pieces (see the module doc).
const FRAGMENT_SECRET_MIN: usize = 20;

/// The shortest piece of a long secret matched on its own.
const FRAGMENT_MIN: usize = 12;

/// Encoded forms shorter than this are not matched: a short run of base64 or hex characters
/// occurs in ordinary text by chance.
const ENCODED_MIN: usize = 16;

/// The ellipsis excerpts end with.
const ELLIPSIS: char = '…';

/// RFC 6750 token68 characters after the scheme, in any spelling (`bearer`, `BEARER`).
static BEARER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bbearer[ \t]+[A-Za-z0-9\-._~+/]+=*")
        .unwrap_or_else(|_| Regex::new("$^").expect("an empty pattern compiles"))
});

/// Whether a reader does not see `c`: control characters (C0, DEL, C1), zero-width and
/// bidirectional formatting characters, the soft hyphen and the byte-order mark. Matching
/// skips them (a secret split by one is still the secret), and every output format strips them
/// from host text (`toolcert_core::output`).
pub fn is_invisible(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{00AD}'
                | '\u{034F}'
                | '\u{061C}'
                | '\u{115F}'
                | '\u{1160}'
                | '\u{17B4}'
                | '\u{17B5}'
                | '\u{180E}'
                | '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{206F}'
                | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FEFF}'
                | '\u{FFA0}'
                | '\u{FFF9}'..='\u{FFFB}'
        )
}

/// One secret and the marker that replaces it.
#[derive(Debug)]
struct Secret {
    text: String,
    marker: &'static str,
}

/// The compiled secrets (shared by clones: a redactor is cloned into every scenario).
#[derive(Debug)]
struct Compiled {
    tokens: Vec<String>,
    canaries: Vec<String>,
    /// Tokens, then canaries, longest first within each.
    secrets: Vec<Secret>,
    /// Every secret whole, exactly, leftmost-longest, so one that contains another goes
    /// whole: what toolcert's own labels are scrubbed of.
    whole: Option<AhoCorasick>,
    /// The forms matched in any ASCII case, overlapping: each secret whole, reversed, in hex,
    /// and its pieces; `folded_of[p]` is the secret pattern `p` belongs to.
    folded: Option<AhoCorasick>,
    folded_of: Vec<usize>,
    /// The forms matched exactly: base64 and base64url cores; `exact_of[p]` as above.
    exact: Option<AhoCorasick>,
    exact_of: Vec<usize>,
    /// The first [`CUT_OFF_MIN`] characters of each secret that has a longer proper head;
    /// `heads_of[p]` lists the secrets that start with pattern `p`.
    heads: Option<AhoCorasick>,
    heads_of: Vec<Vec<usize>>,
    /// The longest secret's byte length: a cut-off head starts within this of its end.
    max_len: usize,
    /// An automaton could not be built (only past aho-corasick's size limits, far beyond any
    /// run's secrets): then every string is replaced whole, failing closed, never leaking.
    failed: bool,
}

impl Compiled {
    /// The shortest piece of `secret` matched on its own, when it is long enough to have
    /// pieces matched at all.
    fn fragment_len(secret: &str) -> Option<usize> {
        let n = secret.chars().count();
        (n >= FRAGMENT_SECRET_MIN).then(|| FRAGMENT_MIN.max(n.div_ceil(3)))
    }
}

/// How much of the matching a string gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Host text: every form, and heads an excerpt cut off.
    Text,
    /// An object key: every form, no cut-off heads (nothing cuts a key off, and a key such as
    /// `host` that happens to be a token's head must stay readable).
    Key,
    /// toolcert's own words: whole secrets and `Bearer` values only.
    Label,
}

/// The characters of `base64(pad + secret)` that depend on the secret's bytes alone, for a
/// pad of `align` bytes: what any base64 text holding the secret at that byte alignment
/// contains.
fn base64_core(engine: &base64::engine::GeneralPurpose, secret: &[u8], align: usize) -> String {
    let mut input = vec![0u8; align];
    input.extend_from_slice(secret);
    let encoded = engine.encode(&input);
    // Character c covers bits [6c, 6c + 6); the secret covers bits [8 align, 8 (align + len)).
    let first = (8 * align).div_ceil(6);
    let end = (8 * (align + secret.len())) / 6;
    encoded
        .get(first..end.min(encoded.len()))
        .unwrap_or("")
        .to_string()
}

/// Scrubs a run's secrets from text and JSON.
#[derive(Debug, Clone)]
pub struct Redactor {
    inner: Arc<Compiled>,
}

impl Default for Redactor {
    fn default() -> Self {
        Redactor::new(Vec::new(), Vec::new())
    }
}

impl Redactor {
    /// A redactor for these tokens and canaries (empty ones are ignored; longer secrets are
    /// replaced first, so one that contains another is never half-redacted).
    pub fn new(tokens: Vec<String>, canaries: Vec<String>) -> Redactor {
        let clean = |mut v: Vec<String>| {
            v.retain(|s| !s.is_empty());
            v.sort_by_key(|s| std::cmp::Reverse(s.len()));
            v.dedup();
            v
        };
        let tokens = clean(tokens);
        let canaries = clean(canaries);
        let secrets: Vec<Secret> = tokens
            .iter()
            .map(|t| (t, REDACTED))
            .chain(canaries.iter().map(|c| (c, CANARY)))
            .map(|(text, marker)| Secret {
                text: text.clone(),
                marker,
            })
            .collect();
        let mut failed = false;
        let mut build = |patterns: &[String], kind: MatchKind, fold: bool| {
            if patterns.is_empty() {
                return None;
            }
            let built = AhoCorasick::builder()
                .match_kind(kind)
                .ascii_case_insensitive(fold)
                .build(patterns);
            failed |= built.is_err();
            built.ok()
        };
        let whole_patterns: Vec<String> = secrets.iter().map(|s| s.text.clone()).collect();
        let (mut folded_patterns, mut folded_of) = (Vec::<String>::new(), Vec::new());
        let (mut exact_patterns, mut exact_of) = (Vec::<String>::new(), Vec::new());
        let add = |patterns: &mut Vec<String>, of: &mut Vec<usize>, p: String, i: usize| {
            if !p.is_empty() && !patterns.contains(&p) {
                patterns.push(p);
                of.push(i);
            }
        };
        for (i, s) in secrets.iter().enumerate() {
            let text = &s.text;
            add(&mut folded_patterns, &mut folded_of, text.clone(), i);
            if text.len() >= 8 {
                add(
                    &mut folded_patterns,
                    &mut folded_of,
                    text.chars().rev().collect(),
                    i,
                );
            }
            let hex = hex::encode(text.as_bytes());
            if hex.len() >= ENCODED_MIN {
                add(&mut folded_patterns, &mut folded_of, hex, i);
            }
            if let Some(n) = Compiled::fragment_len(text) {
                let chars: Vec<char> = text.chars().collect();
                for window in chars.windows(n) {
                    add(
                        &mut folded_patterns,
                        &mut folded_of,
                        window.iter().collect(),
                        i,
                    );
                }
            }
            for engine in [
                &base64::engine::general_purpose::STANDARD_NO_PAD,
                &base64::engine::general_purpose::URL_SAFE_NO_PAD,
            ] {
                for align in 0..3 {
                    let core = base64_core(engine, text.as_bytes(), align);
                    if core.len() >= ENCODED_MIN {
                        add(&mut exact_patterns, &mut exact_of, core, i);
                    }
                }
            }
        }
        let mut head_patterns: Vec<String> = Vec::new();
        let mut heads_of: Vec<Vec<usize>> = Vec::new();
        for (i, s) in secrets.iter().enumerate() {
            // A proper head of at least CUT_OFF_MIN characters needs one more character.
            let Some((cut, _)) = s.text.char_indices().nth(CUT_OFF_MIN) else {
                continue;
            };
            let head = &s.text[..cut];
            match head_patterns.iter().position(|p| p == head) {
                Some(p) => heads_of[p].push(i),
                None => {
                    head_patterns.push(head.to_string());
                    heads_of.push(vec![i]);
                }
            }
        }
        let whole = build(&whole_patterns, MatchKind::LeftmostLongest, false);
        let folded = build(&folded_patterns, MatchKind::Standard, true);
        let exact = build(&exact_patterns, MatchKind::Standard, false);
        let heads = build(&head_patterns, MatchKind::Standard, false);
        let max_len = secrets.iter().map(|s| s.text.len()).max().unwrap_or(0);
        Redactor {
            inner: Arc::new(Compiled {
                tokens,
                canaries,
                secrets,
                whole,
                folded,
                folded_of,
                exact,
                exact_of,
                heads,
                heads_of,
                max_len,
                failed,
            }),
        }
    }

    /// The same redactor, also scrubbing `canaries`.
    pub fn with_canaries(&self, canaries: impl IntoIterator<Item = String>) -> Redactor {
        let mut all = self.inner.canaries.clone();
        all.extend(canaries);
        Redactor::new(self.inner.tokens.clone(), all)
    }

    /// The same redactor, also scrubbing `tokens`.
    pub fn with_tokens(&self, tokens: impl IntoIterator<Item = String>) -> Redactor {
        let mut all = self.inner.tokens.clone();
        all.extend(tokens);
        Redactor::new(all, self.inner.canaries.clone())
    }

    /// Whether this redactor knows no secret (it still scrubs `Bearer` values).
    pub fn is_empty(&self) -> bool {
        self.inner.secrets.is_empty()
    }

    /// Scrub one string.
    pub fn text<'s>(&self, s: &'s str) -> Cow<'s, str> {
        self.scrub_text(s, Mode::Text)
    }

    /// Scrub an object key: every form of a secret, but no cut-off heads. Keys are never
    /// excerpts (nothing cuts one off), and a short key such as `host` that happens to be the
    /// head of a token like `hostile-…` must stay readable.
    fn key<'s>(&self, s: &'s str) -> Cow<'s, str> {
        self.scrub_text(s, Mode::Key)
    }

    /// Scrub a whole file's text right before it is written (`toolcert_core::output`): every form
    /// of every secret and `Bearer` values. Cut-off heads are left to the values an excerpt
    /// ends (scrubbed as such before a report is built): matched on a whole file's text they
    /// would also rewrite report text that merely ends a line with a token's first letters.
    pub fn written<'s>(&self, s: &'s str) -> Cow<'s, str> {
        self.scrub_text(s, Mode::Key)
    }

    /// Scrub toolcert's own text (a check's id and what it says, a row's rule, a scenario's
    /// title): whole secrets and `Bearer` values only. No excerpt ever cut such text, and a
    /// check id such as `still-open` ends with the head of a token like `openwop-…` without
    /// holding any of it.
    pub fn label<'s>(&self, s: &'s str) -> Cow<'s, str> {
        self.scrub_text(s, Mode::Label)
    }

    fn scrub_text<'s>(&self, s: &'s str, mode: Mode) -> Cow<'s, str> {
        let c = &*self.inner;
        if c.failed {
            return Cow::Borrowed(REDACTED);
        }
        let mut out = match mode {
            Mode::Label => self.whole_only(s),
            Mode::Text | Mode::Key => self.forms(s),
        };
        if mode == Mode::Text
            && let Some(cut) = self.cut_off(&out)
        {
            out = Cow::Owned(cut);
        }
        if BEARER.is_match(&out) {
            // `Bearer [redacted]` itself must stay as it is: the scheme word is kept.
            let replaced = BEARER
                .replace_all(&out, |caps: &regex::Captures<'_>| {
                    let m = &caps[0];
                    let scheme_end = m.find([' ', '\t']).unwrap_or(m.len());
                    format!("{} {REDACTED}", &m[..scheme_end])
                })
                .into_owned();
            out = Cow::Owned(replaced);
        }
        out
    }

    /// `s` with every whole secret (exactly as written) replaced.
    fn whole_only<'s>(&self, s: &'s str) -> Cow<'s, str> {
        let c = &*self.inner;
        let Some(whole) = c.whole.as_ref().filter(|w| w.is_match(s)) else {
            return Cow::Borrowed(s);
        };
        let mut replaced = String::with_capacity(s.len());
        let mut last = 0;
        for m in whole.find_iter(s) {
            replaced.push_str(&s[last..m.start()]);
            replaced.push_str(c.secrets[m.pattern().as_usize()].marker);
            last = m.end();
        }
        replaced.push_str(&s[last..]);
        Cow::Owned(replaced)
    }

    /// `s` with every form of every secret replaced (see the module doc), matched on `s` with
    /// its invisible characters skipped, each match replacing the whole span it covers in `s`.
    fn forms<'s>(&self, s: &'s str) -> Cow<'s, str> {
        let c = &*self.inner;
        if c.folded.is_none() && c.exact.is_none() {
            return Cow::Borrowed(s);
        }
        // The visible text, and where invisible characters were left out of it: runs of
        // `(position in the visible text, bytes left out up to and including this run)`, so a
        // position maps back by one binary search (a map per byte would cost eight bytes per
        // byte of a report's text). Only built when `s` holds an invisible character.
        let split = s.chars().any(is_invisible);
        let mut runs: Vec<(usize, usize)> = Vec::new();
        let visible: Cow<'_, str> = if split {
            let mut visible = String::with_capacity(s.len());
            let mut left_out = 0usize;
            for ch in s.chars() {
                if is_invisible(ch) {
                    left_out += ch.len_utf8();
                    match runs.last_mut() {
                        Some(run) if run.0 == visible.len() => run.1 = left_out,
                        _ => runs.push((visible.len(), left_out)),
                    }
                } else {
                    visible.push(ch);
                }
            }
            Cow::Owned(visible)
        } else {
            Cow::Borrowed(s)
        };
        // Bytes left out before the visible byte at `p` (runs at `p` itself included).
        let left_out_before = |p: usize| match runs.partition_point(|run| run.0 <= p) {
            0 => 0,
            i => runs[i - 1].1,
        };
        let mut spans: Vec<(usize, usize, &'static str)> = Vec::new();
        for (automaton, of) in [(&c.folded, &c.folded_of), (&c.exact, &c.exact_of)] {
            let Some(ac) = automaton else { continue };
            if !ac.is_match(visible.as_ref()) {
                continue;
            }
            for m in ac.find_overlapping_iter(visible.as_ref()) {
                let marker = c.secrets[of[m.pattern().as_usize()]].marker;
                spans.push((m.start(), m.end(), marker));
            }
        }
        if spans.is_empty() {
            return Cow::Borrowed(s);
        }
        spans.sort_unstable_by_key(|&(start, end, _)| (start, std::cmp::Reverse(end)));
        // Merge overlapping or touching spans; two secrets' markers in one span read as a token.
        let mut merged: Vec<(usize, usize, &'static str)> = Vec::new();
        for (start, end, marker) in spans {
            match merged.last_mut() {
                Some(last) if start <= last.1 => {
                    last.1 = last.1.max(end);
                    if last.2 != marker {
                        last.2 = REDACTED;
                    }
                }
                _ => merged.push((start, end, marker)),
            }
        }
        let to_s = |start: usize, end: usize| {
            (
                start + left_out_before(start),
                end - 1 + left_out_before(end - 1) + 1,
            )
        };
        let mut out = String::with_capacity(s.len());
        let mut last = 0;
        for (start, end, marker) in merged {
            let (from, to) = to_s(start, end);
            out.push_str(&s[last..from]);
            out.push_str(marker);
            last = to;
        }
        out.push_str(&s[last..]);
        Cow::Owned(out)
    }

    /// `s` with the head of any secret that ends it, or ends just before an `…`, replaced;
    /// `None` when there is none.
    fn cut_off(&self, s: &str) -> Option<String> {
        let c = &*self.inner;
        c.heads.as_ref()?;
        // Where an excerpt may end: before each ellipsis, and at the end, right to left so
        // the earlier positions stay valid while the later ones are rewritten.
        let mut ends: Vec<usize> = s.match_indices(ELLIPSIS).map(|(i, _)| i).collect();
        ends.push(s.len());
        let mut out: Option<String> = None;
        for &end in ends.iter().rev() {
            let text = out.as_deref().unwrap_or(s);
            if let Some((i, n)) = self.head_ending_at(text, end) {
                let mut rewritten = text.to_string();
                rewritten.replace_range(end - n..end, c.secrets[i].marker);
                out = Some(rewritten);
            }
        }
        out
    }

    /// The longest head (at least [`CUT_OFF_MIN`] characters, shorter than the whole) of any
    /// secret that `text[..end]` ends with: the secret's index and the head's byte length.
    fn head_ending_at(&self, text: &str, end: usize) -> Option<(usize, usize)> {
        let c = &*self.inner;
        let heads = c.heads.as_ref()?;
        let mut from = end.saturating_sub(c.max_len);
        while !text.is_char_boundary(from) {
            from += 1;
        }
        // The earliest start of a secret's first characters whose rest runs on as the secret
        // does.
        heads
            .find_overlapping_iter(&text[from..end])
            .flat_map(|m| {
                let tail = &text[from + m.start()..end];
                c.heads_of[m.pattern().as_usize()]
                    .iter()
                    .map(move |&i| (i, tail))
            })
            .filter(|(i, tail)| {
                let secret = &c.secrets[*i].text;
                tail.len() < secret.len() && secret.starts_with(tail)
            })
            .max_by_key(|(_, tail)| tail.len())
            .map(|(i, tail)| (i, tail.len()))
    }

    /// Scrub every string of a JSON value, object keys included.
    pub fn value(&self, v: &Value) -> Value {
        let mut out = v.clone();
        self.scrub(&mut out);
        out
    }

    /// Scrub every string of a JSON value in place, object keys included. Only what a secret
    /// touches is rewritten: observations and transcripts are large and mostly clean, and
    /// rebuilding every one of them whole was a good part of a run's allocations.
    ///
    /// One value is one body: a string that starts with the rest of a secret whose head ends
    /// another string of the value (a secret cut in two across fields) loses that rest too.
    pub fn scrub(&self, v: &mut Value) {
        let mut rests = Vec::new();
        self.rests_of(v, &mut rests);
        self.scrub_with(v, &rests);
    }

    fn scrub_with(&self, v: &mut Value, rests: &[(String, &'static str)]) {
        match v {
            Value::String(s) => {
                let mut owned: Option<String> = None;
                if let Some((rest, marker)) = rests.iter().find(|(r, _)| s.starts_with(r.as_str()))
                {
                    owned = Some(format!("{marker}{}", &s[rest.len()..]));
                }
                let current = owned.as_deref().unwrap_or(s.as_str());
                // Compared, not matched on `Cow::Owned`: a redactor that failed closed hands
                // back a borrowed marker.
                let clean = self.text(current);
                if clean != s.as_str() {
                    *s = clean.into_owned();
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| self.scrub_with(x, rests)),
            Value::Object(m) => {
                if m.keys().any(|k| self.key(k) != k.as_str()) {
                    let taken = std::mem::take(m);
                    for (k, mut x) in taken {
                        self.scrub_with(&mut x, rests);
                        m.insert(self.key(&k).into_owned(), x);
                    }
                } else {
                    m.values_mut().for_each(|x| self.scrub_with(x, rests));
                }
            }
            _ => {}
        }
    }

    /// The rests of secrets whose heads end a string of `v` (see [`Redactor::scrub`]).
    fn rests_of(&self, v: &Value, out: &mut Vec<(String, &'static str)>) {
        match v {
            Value::String(s) => {
                if let Some((i, n)) = self.head_ending_at(s, s.len()) {
                    let secret = &self.inner.secrets[i];
                    let rest = secret.text[n..].to_string();
                    if !out.iter().any(|(r, _)| *r == rest) {
                        out.push((rest, secret.marker));
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| self.rests_of(x, out)),
            Value::Object(m) => m.values().for_each(|x| self.rests_of(x, out)),
            _ => {}
        }
    }

    /// Scrub a serializable value by round-tripping it through JSON (transcripts, check
    /// outcomes); a value that does not round-trip is returned unchanged.
    pub fn serde<T>(&self, v: T) -> T
    where
        T: serde::Serialize + serde::de::DeserializeOwned,
    {
        match serde_json::to_value(&v) {
            Ok(mut json) => {
                self.scrub(&mut json);
                serde_json::from_value(json).unwrap_or(v)
            }
            Err(_) => v,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn tokens_canaries_and_bearer_values_are_scrubbed_everywhere() {
        let r = Redactor::new(vec!["tok-1".into(), String::new()], vec!["canary-9".into()]);
        let v = json!({"a": "Bearer tok-1", "tok-1": ["x canary-9 y", 3], "b": "bearer S3cr3t.value=="});
        assert_eq!(
            r.value(&v),
            json!({"a": "Bearer [redacted]", "[redacted]": ["x [canary] y", 3], "b": "bearer [redacted]"})
        );
        // A key is no excerpt: one that is a token's head stays; a whole token in it goes.
        let r2 = Redactor::new(vec!["hostile-token-1".into()], vec![]);
        assert_eq!(
            r2.value(&json!({"host": "host", "a hostile-token-1": 1})),
            json!({"host": "[redacted]", "a [redacted]": 1})
        );
        // Already-redacted text is left as it is.
        assert_eq!(r.text("Bearer [redacted]"), "Bearer [redacted]");
    }

    #[test]
    fn a_longer_secret_that_contains_a_shorter_one_goes_whole() {
        let r = Redactor::new(vec!["abc".into(), "abcdef".into()], vec![]);
        assert_eq!(r.text("x abcdef y abc"), "x [redacted] y [redacted]");
    }

    #[test]
    fn the_head_of_a_secret_an_excerpt_cut_off_goes_too() {
        let r = Redactor::new(
            vec!["abcdefghij".into()],
            vec!["tc-canary-0123456789".into()],
        );
        // A body excerpt that ends inside a token, a quoted value cut before `…`.
        assert_eq!(r.text("session abcdefg"), "session [redacted]");
        assert_eq!(
            r.text("found \"x tc-canary-01…, and more"),
            "found \"x [canary]…, and more"
        );
        // Fewer than CUT_OFF_MIN characters, or not at an excerpt's end: left as it is.
        assert_eq!(r.text("session abc"), "session abc");
        // toolcert's own labels are no excerpts: a head at their end stays, a whole token goes.
        let r2 = Redactor::new(vec!["openwop-inmem-dev-key".into()], vec![]);
        assert_eq!(r2.text("still-open"), "still-[redacted]");
        assert_eq!(r2.label("still-open"), "still-open");
        assert_eq!(r2.label("a openwop-inmem-dev-key b"), "a [redacted] b");
        assert_eq!(r.text("abcdefg session"), "abcdefg session");
        assert_eq!(r.text("x abcdefghij"), "x [redacted]");
    }

    /// A token of the shape the hostile hosts use: long, random, letters and digits.
    const LONG: &str = "hostileOPq8Z3kW0pLmN4vR7tY1xC6bJ2dF5gH9s";

    fn encodings_of(token: &str) -> Vec<String> {
        use base64::engine::general_purpose::{STANDARD, URL_SAFE, URL_SAFE_NO_PAD};
        vec![
            token.to_ascii_uppercase(),
            token.to_ascii_lowercase(),
            token.chars().rev().collect(),
            hex::encode(token),
            hex::encode_upper(token),
            STANDARD.encode(token),
            URL_SAFE_NO_PAD.encode(token),
            format!("Basic {}", STANDARD.encode(format!("operator:{token}"))),
            URL_SAFE.encode(format!("actor:{token}")),
            STANDARD.encode(format!("x{token}yz")),
            STANDARD.encode(format!("xy{token}")),
        ]
    }

    #[test]
    fn encoded_cased_and_reversed_forms_are_scrubbed() {
        let r = Redactor::new(vec![LONG.into()], vec![]);
        for form in encodings_of(LONG) {
            let out = r.text(&format!("echo: {form} end")).into_owned();
            assert!(out.contains(REDACTED), "{form} => {out}");
            assert!(out.starts_with("echo: ") && out.ends_with(" end"), "{out}");
            assert!(!out.contains(&form), "{form} survived in {out}");
        }
        // Object keys get the same forms (but no cut-off heads).
        let key = hex::encode(LONG);
        let v = r.value(&json!({key.clone(): 1}));
        assert!(v.get(&key).is_none(), "{v}");
    }

    #[test]
    fn a_secret_split_by_invisible_characters_goes_whole() {
        let r = Redactor::new(vec![LONG.into()], vec![]);
        for split in [
            '\u{7f}', '\0', '\u{1b}', '\u{200b}', '\u{202e}', '\u{feff}', '\u{85}',
        ] {
            let (a, b) = LONG.split_at(15);
            let text = format!("[{a}{split}{b}]");
            assert_eq!(r.text(&text), format!("[{REDACTED}]"), "{split:?}");
        }
        // Several splits, and invisible characters elsewhere stay where they are.
        let many: String = LONG.chars().flat_map(|c| [c, '\u{7f}']).collect();
        assert_eq!(
            r.text(&format!("\u{1}a {many}")),
            format!("\u{1}a {REDACTED}\u{7f}")
        );
    }

    #[test]
    fn a_long_secret_cut_across_fields_goes_in_every_piece() {
        let r = Redactor::new(vec![LONG.into()], vec![]);
        let (a, b) = LONG.split_at(20);
        // Two pieces in one body, in either order, each with text around it.
        let v = r.value(&json!({"z": format!("x {a}"), "a": format!("{b} y")}));
        assert_eq!(v, json!({"z": "x [redacted]", "a": "[redacted] y"}));
        // A quote of both in one string.
        let out = r
            .text(&format!("{{\"a\":\"{a}\",\"b\":\"{b}\"}}"))
            .into_owned();
        assert!(!out.contains(a) && !out.contains(b), "{out}");
        // An uneven cut: the short rest goes where the head ends another field of the body.
        let (head, rest) = LONG.split_at(LONG.len() - 6);
        let v = r.value(&json!([
            "one",
            format!("pre {head}"),
            format!("{rest} post")
        ]));
        assert_eq!(v, json!(["one", "pre [redacted]", "[redacted] post"]));
        // A piece shorter than the fragment length, alone, is not a match.
        assert_eq!(r.text("see q8Z3kW0pLm here"), "see q8Z3kW0pLm here");
    }

    #[test]
    fn short_secrets_get_no_encoded_or_fragment_forms() {
        // Too short for its pieces or encodings to be told from ordinary text.
        let r = Redactor::new(vec!["tok-1".into()], vec![]);
        assert_eq!(r.text("dG9rLTE= 1-kot"), "dG9rLTE= 1-kot");
        assert_eq!(r.text("TOK-1"), REDACTED);
    }

    proptest! {
        /// Whatever invisible characters a host puts inside a token, and wherever it puts it,
        /// none of the token's characters survive in a run of 8.
        #[test]
        fn no_split_token_survives(
            prefix in "[a-z ]{0,20}",
            cuts in proptest::collection::vec((0usize..40, proptest::sample::select(vec!['\u{7f}', '\0', '\u{200b}', '\u{202e}', '\n'])), 0..6),
        ) {
            let r = Redactor::new(vec![LONG.into()], vec![]);
            let mut chars: Vec<char> = LONG.chars().collect();
            let mut cuts = cuts;
            cuts.sort_by_key(|c| std::cmp::Reverse(c.0));
            for (at, c) in cuts {
                chars.insert(at.min(chars.len()), c);
            }
            let token: String = chars.into_iter().collect();
            let out = r.text(&format!("{prefix}{token}")).into_owned();
            let visible: String = out.chars().filter(|c| !is_invisible(*c)).collect();
            for i in 0..=LONG.len() - 8 {
                prop_assert!(!visible.contains(&LONG[i..i + 8]), "{out:?}");
            }
        }

        /// Any encoding in the covered list, anywhere in any text, is scrubbed.
        #[test]
        fn no_encoded_token_survives(prefix in ".{0,30}", suffix in ".{0,30}", pick in 0usize..11) {
            let r = Redactor::new(vec![LONG.into()], vec![]);
            let form = &encodings_of(LONG)[pick];
            let out = r.text(&format!("{prefix}{form}{suffix}")).into_owned();
            prop_assert!(!out.contains(form.as_str()), "{out:?}");
        }
    }

    proptest! {
        /// Wherever a token is cut off, at the end or before an `…`, a head of it at least
        /// CUT_OFF_MIN characters long goes.
        #[test]
        fn no_cut_off_token_head_survives(
            prefix in ".{0,40}",
            token in "[A-Za-z0-9_-]{8,40}",
            cut in 0usize..40,
            ellipsis in proptest::bool::ANY,
        ) {
            prop_assume!(!REDACTED.contains(token.as_str()) && !CANARY.contains(token.as_str()));
            let cut = cut.min(token.len());
            let head = &token[..cut];
            let r = Redactor::new(vec![token.clone()], vec![]);
            let tail = if ellipsis { "…" } else { "" };
            let text = format!("{prefix}{head}{tail}");
            let out = r.text(&text).into_owned();
            if cut >= CUT_OFF_MIN {
                prop_assert!(out.ends_with(&format!("{REDACTED}{tail}")), "{text:?} => {out:?}");
            }
        }

        /// With many secrets at once (a run has a canary per scenario), none survives whole
        /// and none survives cut off at the end, whichever secret shares a head with another.
        #[test]
        fn many_secrets_none_survives_whole_or_cut_off(
            tokens in proptest::collection::vec("[a-d0-3]{6,12}", 1..6),
            canaries in proptest::collection::vec("tc-canary-[0-9a-f]{4}", 0..6),
            picks in proptest::collection::vec((0usize..12, ".{0,6}"), 1..6),
            cut in 0usize..12,
        ) {
            let secrets: Vec<String> = tokens.iter().chain(&canaries).cloned().collect();
            prop_assume!(secrets.iter().all(|s| !REDACTED.contains(s.as_str()) && !CANARY.contains(s.as_str())));
            let r = Redactor::new(tokens.clone(), canaries.clone());
            let mut text = String::new();
            for (i, filler) in &picks {
                text.push_str(filler);
                text.push_str(&secrets[i % secrets.len()]);
            }
            let last = &secrets[cut % secrets.len()];
            let head = &last[..(cut % last.len()).max(CUT_OFF_MIN).min(last.len() - 1)];
            text.push(' ');
            text.push_str(head);
            let out = r.text(&text).into_owned();
            for s in &secrets {
                prop_assert!(!out.contains(s.as_str()), "{s} in {out:?} (from {text:?})");
            }
            prop_assert!(!out.ends_with(head), "{head} ends {out:?} (from {text:?})");
        }

        /// Whatever text surrounds a token, no byte of it survives.
        #[test]
        fn no_token_survives_any_surrounding_text(
            prefix in ".{0,40}",
            suffix in ".{0,40}",
            token in "[A-Za-z0-9_-]{8,40}",
        ) {
            prop_assume!(!REDACTED.contains(token.as_str()) && !CANARY.contains(token.as_str()));
            let r = Redactor::new(vec![token.clone()], vec![]);
            let out = r.text(&format!("{prefix}{token}{suffix}")).into_owned();
            prop_assert!(!out.contains(&token), "{out}");
        }
    }
}
