//! Signed link tokens of approval interrupts.
//!
//! A link token is what a host would put into an "approve this" email: an
//! opaque string that names one interrupt without naming a principal. It is
//! `ilt_<nonce>.<mac>`, where the nonce is 128 random bits (hex) and the
//! mac is HMAC-SHA256 under a per-host random key over
//! `"openwop:interrupt-link:v1" 0 runId 0 nodeId 0 callId 0 nonce` (hex), so
//! a token is bound to exactly one interrupt and cannot be forged or moved
//! to another one.
//!
//! A valid token is NOT authority over an untrusted turn: TTC §C says such
//! an interrupt resolves only by the acting authenticated principal bound
//! to it (see `interrupts::routes`).

use sha2::{Digest, Sha256};

/// Prefix of every link token.
pub const TOKEN_PREFIX: &str = "ilt_";

/// Domain separation of the mac input.
const MAC_DOMAIN: &[u8] = b"openwop:interrupt-link:v1";

/// SHA-256 block size (bytes), for HMAC.
const BLOCK: usize = 64;

/// What a token is bound to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binding<'a> {
    /// The run.
    pub run_id: &'a str,
    /// The node the interrupt is at.
    pub node_id: &'a str,
    /// The held call.
    pub call_id: &'a str,
}

/// The per-host signing key (random, never leaves the process).
#[derive(Clone)]
pub struct LinkKey([u8; 32]);

impl std::fmt::Debug for LinkKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is a secret: never printed.
        f.write_str("LinkKey([redacted])")
    }
}

impl LinkKey {
    /// A fresh random key (two v4 UUIDs: 244 random bits from the OS).
    pub fn random() -> Self {
        let mut key = [0u8; 32];
        key[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        key[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        Self(key)
    }

    /// A key with fixed bytes (tests).
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// Mints a token for `binding` with a fresh nonce.
    pub fn mint(&self, binding: Binding<'_>) -> String {
        let nonce = uuid::Uuid::new_v4().simple().to_string();
        self.token(binding, &nonce)
    }

    /// The token for `binding` and `nonce`.
    fn token(&self, binding: Binding<'_>, nonce: &str) -> String {
        format!(
            "{TOKEN_PREFIX}{nonce}.{}",
            hex::encode(self.mac(binding, nonce))
        )
    }

    /// Whether `token` is this key's token for `binding`
    /// (constant-time in the mac).
    pub fn verify(&self, token: &str, binding: Binding<'_>) -> bool {
        let Some((nonce, mac_hex)) = split(token) else {
            return false;
        };
        let Ok(given) = hex::decode(mac_hex) else {
            return false;
        };
        constant_time_eq(&given, &self.mac(binding, nonce))
    }

    fn mac(&self, binding: Binding<'_>, nonce: &str) -> [u8; 32] {
        let mut message = Vec::with_capacity(
            MAC_DOMAIN.len()
                + binding.run_id.len()
                + binding.node_id.len()
                + binding.call_id.len()
                + nonce.len()
                + 4,
        );
        for (index, part) in [
            MAC_DOMAIN,
            binding.run_id.as_bytes(),
            binding.node_id.as_bytes(),
            binding.call_id.as_bytes(),
            nonce.as_bytes(),
        ]
        .into_iter()
        .enumerate()
        {
            if index > 0 {
                message.push(0);
            }
            message.extend_from_slice(part);
        }
        hmac_sha256(&self.0, &message)
    }
}

/// The nonce of a well-formed token (used to find its interrupt).
pub fn nonce_of(token: &str) -> Option<&str> {
    split(token).map(|(nonce, _)| nonce)
}

/// `ilt_<32 hex>.<64 hex>` ⇒ (nonce, mac hex).
fn split(token: &str) -> Option<(&str, &str)> {
    let rest = token.strip_prefix(TOKEN_PREFIX)?;
    let (nonce, mac) = rest.split_once('.')?;
    let hex_of =
        |text: &str, len: usize| text.len() == len && text.bytes().all(|b| b.is_ascii_hexdigit());
    (hex_of(nonce, 32) && hex_of(mac, 64)).then_some((nonce, mac))
}

/// HMAC-SHA256 (RFC 2104) of `message` under `key`.
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let inner_pad: Vec<u8> = block.iter().map(|b| b ^ 0x36).collect();
    let outer_pad: Vec<u8> = block.iter().map(|b| b ^ 0x5c).collect();
    let inner = Sha256::new()
        .chain_update(&inner_pad)
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(&outer_pad)
        .chain_update(inner)
        .finalize()
        .into()
}

/// Equality whose time does not depend on where the inputs differ (also
/// used for the MCP server's request states).
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const BINDING: Binding<'static> = Binding {
        run_id: "run_1",
        node_id: "agent",
        call_id: "call_1",
    };

    #[test]
    fn hmac_matches_rfc_4231_test_cases() {
        // Test case 2.
        assert_eq!(
            hex::encode(hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // Test case 6 (a key longer than the block is hashed first).
        assert_eq!(
            hex::encode(hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn tokens_verify_only_for_their_binding_and_key() {
        let key = LinkKey::random();
        let token = key.mint(BINDING);
        assert!(token.starts_with(TOKEN_PREFIX));
        assert!(key.verify(&token, BINDING));
        assert_eq!(nonce_of(&token).map(str::len), Some(32));
        for other in [
            Binding {
                run_id: "run_2",
                ..BINDING
            },
            Binding {
                node_id: "other",
                ..BINDING
            },
            Binding {
                call_id: "call_2",
                ..BINDING
            },
        ] {
            assert!(!key.verify(&token, other));
        }
        assert!(!LinkKey::random().verify(&token, BINDING));
        let mut forged = token.clone();
        forged.pop();
        forged.push(if token.ends_with('0') { '1' } else { '0' });
        assert!(!key.verify(&forged, BINDING));
    }

    #[test]
    fn malformed_tokens_are_rejected() {
        let key = LinkKey::from_bytes([7; 32]);
        for bad in ["", "ilt_", "ilt_abc.def", "xyz_0.0", &"ilt_".repeat(30)] {
            assert!(nonce_of(bad).is_none(), "{bad}");
            assert!(!key.verify(bad, BINDING), "{bad}");
        }
        assert_eq!(format!("{key:?}"), "LinkKey([redacted])");
    }
}
