//! The `requestState` of the MCP server mount's `input_required` results
//! (MCP-9, TURN-E4, TTC §C).
//!
//! A client echoes the string byte-exactly in its MRTR retry; to it the
//! value is opaque. To the host it is `rs1.<payload hex>.<mac hex>`:
//! the payload is the JSON of [`StateClaims`] (the run, the interrupt keys
//! and the interrupt's identity, the principal and tenant it was issued
//! to, the tool name), and the mac is HMAC-SHA256 under a per-process
//! random key over `"openwop:mcp-request-state:v1" 0 payload`. So a state
//! cannot be forged, altered, or used by anyone but the principal it was
//! issued to, and it names exactly one open interrupt: once that interrupt
//! is answered (or gone) the same state names nothing open any more.
//!
//! Opening a state ([`StateKey::open`]) separates "well formed" from
//! "authentic", so the caller decides (at one named place) what an
//! unauthentic state means.

use serde_json::{Map, Value, json};

use crate::base::args_hash::sha256_hex;
use crate::base::mac_key::MacKey;
use crate::domain::interrupts::Ticket;

/// Prefix of every request state this host issues.
pub const PREFIX: &str = "rs1.";

/// Domain separation of the mac input.
const MAC_DOMAIN: &[u8] = b"openwop:mcp-request-state:v1";

/// Longest payload (bytes, before hex) accepted when opening a state; a
/// longer one was not issued here.
pub const MAX_PAYLOAD_BYTES: usize = 4_096;

/// What a request state binds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateClaims {
    /// The run waiting on the interrupt.
    pub run_id: String,
    /// The `inputRequests` keys the retry must answer.
    pub keys: Vec<String>,
    /// The identity of the open interrupt ([`interrupt_id`]).
    pub interrupt: String,
    /// The principal the state was issued to (the run's principal).
    pub principal: String,
    /// That principal's tenant.
    pub tenant: String,
    /// The MCP tool name of the call.
    pub tool: String,
}

impl StateClaims {
    fn to_json(&self) -> Value {
        json!({
            "runId": self.run_id,
            "keys": self.keys,
            "interrupt": self.interrupt,
            "principal": self.principal,
            "tenant": self.tenant,
            "tool": self.tool,
        })
    }

    fn from_json(value: &Value) -> Option<Self> {
        let map: &Map<String, Value> = value.as_object()?;
        if map.len() != 6 {
            return None;
        }
        let text = |name: &str| map.get(name)?.as_str().map(str::to_owned);
        let keys = map
            .get("keys")?
            .as_array()?
            .iter()
            .map(|key| key.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()?;
        Some(Self {
            run_id: text("runId")?,
            keys,
            interrupt: text("interrupt")?,
            principal: text("principal")?,
            tenant: text("tenant")?,
            tool: text("tool")?,
        })
    }
}

/// A well-formed request state, opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    /// What it claims.
    pub claims: StateClaims,
    /// Whether its mac verifies under this host's key (it was issued here
    /// and not altered).
    pub authentic: bool,
}

/// The identity of one open interrupt: a digest over its run, call and
/// (per-open, random) link token, so a later interrupt of the same run at
/// the same node has another identity. The token itself is not revealed.
pub fn interrupt_id(ticket: &Ticket) -> String {
    let input = format!(
        "openwop:mcp-interrupt:v1\0{}\0{}\0{}\0{}",
        ticket.run_id, ticket.node_id, ticket.call_id, ticket.token
    );
    sha256_hex(input.as_bytes())[..32].to_owned()
}

/// The per-process signing key of request states (random, never leaves the
/// process).
#[derive(Debug, Default)]
pub struct StateKey(MacKey);

impl StateKey {
    /// A fresh random key.
    pub fn random() -> Self {
        Self(MacKey::random())
    }

    /// A key with fixed bytes (tests).
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(MacKey::from_bytes(bytes))
    }

    /// The request state for `claims`.
    pub fn mint(&self, claims: &StateClaims) -> String {
        // Serialising a `Value` cannot fail; the empty fallback keeps this
        // panic-free (and would never open).
        let payload = serde_json::to_vec(&claims.to_json()).unwrap_or_default();
        format!(
            "{PREFIX}{}.{}",
            hex::encode(&payload),
            hex::encode(self.mac(&payload))
        )
    }

    /// Opens `state`: `None` when it is not well formed (not a state this
    /// host's format describes), else its claims and whether it verifies.
    pub fn open(&self, state: &str) -> Option<Opened> {
        let rest = state.strip_prefix(PREFIX)?;
        let (payload_hex, mac_hex) = rest.split_once('.')?;
        if payload_hex.len() > 2 * MAX_PAYLOAD_BYTES || mac_hex.len() != 64 {
            return None;
        }
        let payload = hex::decode(payload_hex).ok()?;
        let mac = hex::decode(mac_hex).ok()?;
        let value: Value = serde_json::from_slice(&payload).ok()?;
        let claims = StateClaims::from_json(&value)?;
        Some(Opened {
            claims,
            authentic: self.0.verify(&mac, MAC_DOMAIN, &[&payload]),
        })
    }

    fn mac(&self, payload: &[u8]) -> [u8; 32] {
        self.0.mac(MAC_DOMAIN, &[payload])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims() -> StateClaims {
        StateClaims {
            run_id: "run_1".into(),
            keys: vec!["agent".into()],
            interrupt: "0123".into(),
            principal: "alice".into(),
            tenant: "tenant-a".into(),
            tool: "helper".into(),
        }
    }

    #[test]
    fn minted_states_open_authentic_with_their_claims() {
        let key = StateKey::random();
        let state = key.mint(&claims());
        assert!(state.starts_with(PREFIX));
        let opened = key.open(&state).expect("well formed");
        assert!(opened.authentic);
        assert_eq!(opened.claims, claims());
    }

    #[test]
    fn altered_or_foreign_states_are_not_authentic() {
        let key = StateKey::from_bytes([7; 32]);
        let state = key.mint(&claims());
        // Another key (another host process).
        assert_eq!(
            StateKey::random().open(&state).map(|o| o.authentic),
            Some(false)
        );
        // The principal swapped in the payload, mac kept.
        let (payload, mac) = state[PREFIX.len()..].split_once('.').expect("dot");
        let mut altered: Value =
            serde_json::from_slice(&hex::decode(payload).expect("hex")).expect("json");
        altered["principal"] = json!("bob");
        let forged = format!(
            "{PREFIX}{}.{mac}",
            hex::encode(serde_json::to_vec(&altered).expect("json"))
        );
        let opened = key.open(&forged).expect("still well formed");
        assert!(!opened.authentic);
        assert_eq!(opened.claims.principal, "bob");
        // One mac digit changed.
        let mut flipped = state.clone();
        let last = flipped.pop().expect("non-empty");
        flipped.push(if last == '0' { '1' } else { '0' });
        assert_eq!(key.open(&flipped).map(|o| o.authentic), Some(false));
    }

    #[test]
    fn malformed_states_do_not_open() {
        let key = StateKey::random();
        let good = key.mint(&claims());
        let (payload, _) = good[PREFIX.len()..].split_once('.').expect("dot");
        for bad in [
            String::new(),
            "rs1.".into(),
            "rs1.zz.00".into(),
            format!("rs2.{}", &good[PREFIX.len()..]),
            format!("{PREFIX}{payload}.abc"),
            format!("{PREFIX}{}.{}", hex::encode(b"[1]"), "0".repeat(64)),
            format!("{PREFIX}{}.{}", "00".repeat(5_000), "0".repeat(64)),
        ] {
            assert_eq!(key.open(&bad), None, "{bad}");
        }
        assert_eq!(format!("{key:?}"), "StateKey(MacKey([redacted]))");
    }
}
