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
//! to it (see `surface::interrupt_routes`).

use crate::base::mac_key::MacKey;

/// Prefix of every link token.
pub const TOKEN_PREFIX: &str = "ilt_";

/// Domain separation of the mac input.
const MAC_DOMAIN: &[u8] = b"openwop:interrupt-link:v1";

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

/// The per-host signing key of link tokens (random, never leaves the
/// process).
#[derive(Debug, Clone, Default)]
pub struct LinkKey(MacKey);

impl LinkKey {
    /// A fresh random key.
    pub fn random() -> Self {
        Self(MacKey::random())
    }

    /// A key with fixed bytes (tests).
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(MacKey::from_bytes(bytes))
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
        self.0.verify(&given, MAC_DOMAIN, &parts(binding, nonce))
    }

    fn mac(&self, binding: Binding<'_>, nonce: &str) -> [u8; 32] {
        self.0.mac(MAC_DOMAIN, &parts(binding, nonce))
    }
}

/// The mac input after the domain: `runId 0 nodeId 0 callId 0 nonce`.
fn parts<'a>(binding: Binding<'a>, nonce: &'a str) -> [&'a [u8]; 4] {
    [
        binding.run_id.as_bytes(),
        binding.node_id.as_bytes(),
        binding.call_id.as_bytes(),
        nonce.as_bytes(),
    ]
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

#[cfg(test)]
mod tests {
    use super::*;

    const BINDING: Binding<'static> = Binding {
        run_id: "run_1",
        node_id: "agent",
        call_id: "call_1",
    };

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
        assert_eq!(format!("{key:?}"), "LinkKey(MacKey([redacted]))");
    }
}
