//! The per-process HMAC-SHA256 key behind the host's signed strings: the
//! link tokens of approval interrupts ([`crate::domain::interrupts::token`]) and the
//! MCP server's request states ([`crate::surface::mcp_server::request_state`]).
//!
//! A key is 32 random bytes that never leave the process and are never
//! printed. Every mac is domain-separated: the input is `domain 0 part 0
//! part …`, so a value signed for one purpose never verifies for another.

use sha2::{Digest, Sha256};

/// SHA-256 block size (bytes), for HMAC.
const BLOCK: usize = 64;

/// A random HMAC-SHA256 key of this process.
#[derive(Clone)]
pub struct MacKey([u8; 32]);

impl std::fmt::Debug for MacKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is a secret: never printed.
        f.write_str("MacKey([redacted])")
    }
}

impl Default for MacKey {
    fn default() -> Self {
        Self::random()
    }
}

impl MacKey {
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

    /// The mac of `domain 0 part 0 part …` under this key.
    pub fn mac(&self, domain: &[u8], parts: &[&[u8]]) -> [u8; 32] {
        let len = domain.len() + parts.iter().map(|p| p.len() + 1).sum::<usize>();
        let mut message = Vec::with_capacity(len);
        message.extend_from_slice(domain);
        for part in parts {
            message.push(0);
            message.extend_from_slice(part);
        }
        hmac_sha256(&self.0, &message)
    }

    /// Whether `given` is the mac of `domain` and `parts` (constant-time in
    /// the mac).
    pub fn verify(&self, given: &[u8], domain: &[u8], parts: &[&[u8]]) -> bool {
        constant_time_eq(given, &self.mac(domain, parts))
    }
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

/// Equality whose time does not depend on where the inputs differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn macs_are_domain_separated_and_keyed() {
        let key = MacKey::from_bytes([7; 32]);
        let mac = key.mac(b"d1", &[b"a", b"b"]);
        assert!(key.verify(&mac, b"d1", &[b"a", b"b"]));
        assert!(!key.verify(&mac, b"d2", &[b"a", b"b"]));
        // The separator keeps part boundaries: ("a", "b") is not ("ab").
        assert!(!key.verify(&mac, b"d1", &[b"ab"]));
        assert!(!MacKey::from_bytes([8; 32]).verify(&mac, b"d1", &[b"a", b"b"]));
        assert_eq!(format!("{key:?}"), "MacKey([redacted])");
    }
}
