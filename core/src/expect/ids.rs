//! Host-minted ids: undoing the one-segment projection of identity.md §5, and an estimate of
//! how many bits of entropy an id's opaque segment carries (MCP-14: a `taskId` is the run's
//! projected `runId`, "with an opaque segment of at least 128 bits of entropy").
//!
//! # The projection
//!
//! A tenant-bound id `tenant/opaque` travels as one path segment: every byte outside
//! `[A-Za-z0-9._-]` becomes `~` and two hex digits (`acme/r-9f3c` ⇒ `acme~2Fr-9f3c`).
//! [`unproject`] undoes it; ids that were never projected come back as they are.
//!
//! # The entropy estimate
//!
//! Entropy is a property of how an id was minted, which toolcert cannot see; one id shows only
//! its characters. [`estimate`] reads them as a minting scheme would have written them and
//! counts the bits such a scheme carries at most:
//!
//! 1. The opaque segment: the id unprojected, the part after its last `/` (the tenant is no
//!    secret).
//! 2. A type tag is not random: when the segment is one or more words `[A-Za-z][A-Za-z0-9]*`
//!    each followed by `_` (`run_`, `run_a2a_`) and then a random part that is either a UUID
//!    in its 8-4-4-4-12 form or at least 8 hex digits of one case, only that part counts.
//!    (A random base64url string ends in 8 or more hex digits after such a prefix with a
//!    chance under 4⁻⁸, so the rule practically never shortens a random id.)
//! 3. A UUID in its 8-4-4-4-12 form carries the bits its version leaves random: 122 for v4
//!    (and v8 and the name-based v3 and v5, at most), 74 for v7 (its time stamp is not
//!    secret), 14 for the time-and-node v1, v2 and v6 (only the clock sequence).
//! 4. Anything else is `length × log2(alphabet)`, with the smallest standard alphabet that
//!    holds every character: hex of one case (16), RFC 4648 base32 of one case (32),
//!    alphanumerics (62), base64url (64), identity.md's opaque alphabet `[A-Za-z0-9._~-]`
//!    (66), else the 95 printable ASCII characters.
//!
//! The estimate is an upper bound wherever the characters cannot tell: 32 hex digits that
//! happen to be an undashed v4 UUID read as 128 bits, a counter in hex reads as random. It is
//! exact for the schemes it recognises (random bytes in hex, base64url, base32; UUIDs), so a
//! host whose ids carry too few bits by any of them fails, and one whose ids carry enough
//! never does.

/// How an opaque segment was read.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// The part counted (the opaque segment without its type tag).
    pub random_part: String,
    /// What it was read as (`hex`, `uuid v4`, `base64url`, …).
    pub scheme: String,
    /// Bits of entropy it can carry at most.
    pub bits: f64,
}

/// `id` with identity.md §5's projection undone: `~` and two hex digits become that byte.
/// Bytes that do not form UTF-8 read as U+FFFD.
pub fn unproject(id: &str) -> String {
    let bytes = id.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escape = bytes[i] == b'~'
            && bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
            && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
        if escape {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("00");
            out.push(u8::from_str_radix(hex, 16).unwrap_or(0));
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The opaque segment of an id: unprojected, the part after its last `/`.
pub fn opaque_segment(id: &str) -> String {
    let plain = unproject(id);
    match plain.rsplit_once('/') {
        Some((_, opaque)) => opaque.to_owned(),
        None => plain,
    }
}

/// The entropy estimate of `id`'s opaque segment (see the module docs).
pub fn estimate(id: &str) -> Estimate {
    let segment = opaque_segment(id);
    let random_part = untagged(&segment).unwrap_or(&segment).to_owned();
    if let Some(version) = uuid_version(&random_part) {
        let (bits, kind) = match version {
            '7' => (74.0, "uuid v7"),
            '1' | '2' | '6' => (14.0, "time-based uuid"),
            _ => (122.0, "uuid"),
        };
        return Estimate {
            random_part,
            scheme: if kind == "uuid" {
                format!("uuid v{version}")
            } else {
                kind.to_owned()
            },
            bits,
        };
    }
    let (scheme, size) = alphabet(&random_part);
    let length = random_part.chars().count() as f64;
    Estimate {
        random_part,
        scheme: scheme.to_owned(),
        bits: length * f64::from(size).log2(),
    }
}

/// The random part after a type tag (rule 2), when the segment has one.
fn untagged(segment: &str) -> Option<&str> {
    let (tag, rest) = segment.rsplit_once('_')?;
    let words_ok = tag.split('_').all(|word| {
        let mut chars = word.chars();
        chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric())
    });
    let random = uuid_version(rest).is_some() || (rest.len() >= 8 && one_case_hex(rest));
    (words_ok && random).then_some(rest)
}

/// Hex digits all of one case (digits alone count as either).
fn one_case_hex(s: &str) -> bool {
    !s.is_empty()
        && (s.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f'))
            || s.chars().all(|c| matches!(c, '0'..='9' | 'A'..='F')))
}

/// The version digit of a UUID in its 8-4-4-4-12 form (either case).
fn uuid_version(s: &str) -> Option<char> {
    let groups: Vec<&str> = s.split('-').collect();
    let shaped = groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.chars().all(|c| c.is_ascii_hexdigit()));
    if !shaped {
        return None;
    }
    groups[2].chars().next()
}

/// The smallest standard alphabet holding every character of `s`, and its size (rule 4).
fn alphabet(s: &str) -> (&'static str, u32) {
    let all = |f: fn(char) -> bool| s.chars().all(f);
    if one_case_hex(s) {
        ("hex", 16)
    } else if all(|c| matches!(c, 'A'..='Z' | '2'..='7'))
        || all(|c| matches!(c, 'a'..='z' | '2'..='7'))
    {
        ("base32", 32)
    } else if all(|c| c.is_ascii_alphanumeric()) {
        ("alphanumeric", 62)
    } else if all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        ("base64url", 64)
    } else if all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~')) {
        ("opaque id alphabet", 66)
    } else {
        ("printable ASCII", 95)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// identity.md §5's projection, for the round trip.
    fn project(s: &str) -> String {
        let mut out = String::new();
        for b in s.bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-') {
                out.push(b as char);
            } else {
                out.push_str(&format!("~{b:02X}"));
            }
        }
        out
    }

    #[test]
    fn known_ids_read_as_their_schemes() {
        let cases: &[(&str, f64, &str)] = &[
            ("run_0123456789abcdef0123456789abcdef", 128.0, "hex"),
            ("run_a2a_0123456789abcdef0123456789abcdef", 128.0, "hex"),
            ("run_deadbeef", 32.0, "hex"),
            ("acme~2Frun_DEADBEEFDEADBEEFDEADBEEFDEADBEEF", 128.0, "hex"),
            (
                "acme/786512e2-9e0d-44bd-8f29-789f320fe840",
                122.0,
                "uuid v4",
            ),
            (
                "task_786512e2-9e0d-44bd-8f29-789f320fe840",
                122.0,
                "uuid v4",
            ),
            ("01890a5d-ac96-774b-bcce-b302099a8057", 74.0, "uuid v7"),
            (
                "c232ab00-9414-11ec-b3c8-9f68deced846",
                14.0,
                "time-based uuid",
            ),
            ("MFRGGZDFMZTWQ2LK", 80.0, "base32"),
        ];
        for (id, bits, scheme) in cases {
            let e = estimate(id);
            assert!((e.bits - bits).abs() < 1e-9, "{id}: {e:?}");
            assert_eq!(e.scheme, *scheme, "{id}");
        }
        // 22 base64url characters of 16 random bytes: 132 bits.
        let e = estimate("r-9f3c_Q2x-ZbTj8KwP0Aa");
        assert_eq!(e.scheme, "base64url");
        assert!((e.bits - 132.0).abs() < 1e-9);
        assert_eq!(estimate("").bits, 0.0);
        // A tag needs a random part behind it; a word alone is just characters.
        assert_eq!(estimate("run_").scheme, "base64url");
        assert_eq!(estimate("ab_cd").random_part, "ab_cd");
    }

    proptest! {
        #[test]
        fn unprojecting_undoes_the_projection(s in "\\PC{0,40}") {
            prop_assert_eq!(unproject(&project(&s)), s);
        }

        #[test]
        fn random_hex_counts_four_bits_a_digit_behind_tags_and_tenants(
            bytes in proptest::collection::vec(any::<u8>(), 4..48),
            tag in "([a-z][a-z0-9]{0,6}_){0,2}",
            tenant in proptest::option::of("[a-z][a-z0-9-]{0,10}"),
            upper in any::<bool>(),
            projected in any::<bool>(),
        ) {
            let hex = if upper { hex::encode_upper(&bytes) } else { hex::encode(&bytes) };
            let opaque = format!("{tag}{hex}");
            let id = match (&tenant, projected) {
                (Some(t), true) => format!("{t}~2F{opaque}"),
                (Some(t), false) => format!("{t}/{opaque}"),
                (None, _) => opaque,
            };
            let e = estimate(&id);
            prop_assert_eq!(e.bits, 8.0 * bytes.len() as f64, "{} read as {:?}", id, e);
            prop_assert_eq!(e.scheme, "hex");
        }

        #[test]
        fn base64url_with_a_dash_counts_six_bits_a_character(
            head in "[A-Za-z0-9_-]{0,30}",
            tail in "[A-Za-z0-9_-]{0,30}",
        ) {
            // A `-` rules out the hex and UUID readings and every smaller alphabet.
            let id = format!("{head}-{tail}");
            prop_assume!(uuid_version(&id).is_none());
            let e = estimate(&id);
            prop_assert_eq!(e.bits, 6.0 * id.len() as f64, "{} read as {:?}", id, e);
        }

        #[test]
        fn the_estimate_is_bounded_by_printable_ascii(s in "\\PC{0,60}") {
            let e = estimate(&s);
            let chars = opaque_segment(&s).chars().count() as f64;
            prop_assert!(e.bits >= 0.0);
            prop_assert!(e.bits <= chars * 95f64.log2() + 1e-9, "{} read as {:?}", s, e);
        }

        #[test]
        fn a_random_v4_uuid_carries_122_bits(bytes in proptest::array::uniform16(any::<u8>()), tag in "([a-z]{1,5}_)?") {
            let mut b = bytes;
            b[6] = (b[6] & 0x0f) | 0x40;
            b[8] = (b[8] & 0x3f) | 0x80;
            let h = hex::encode(b);
            let id = format!("{tag}{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..]);
            let e = estimate(&id);
            prop_assert_eq!(e.bits, 122.0, "{} read as {:?}", id, e);
        }
    }
}
