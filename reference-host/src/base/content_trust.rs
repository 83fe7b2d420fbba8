//! The trust level of content (tool-turn contract §C, RFC 0143).
//!
//! Plain data every layer may use; how a turn's trust is derived lives in
//! [`crate::turn::trust`].

use serde::{Deserialize, Serialize};

/// Whether a turn consumed only trusted content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContentTrust {
    /// Only trusted input (the user's) went into the prompt.
    Trusted,
    /// The prompt carried at least one tool result.
    Untrusted,
}

impl ContentTrust {
    /// The trust of the user's input, where every run starts (TTC §C).
    pub const USER_INPUT: Self = Self::Trusted;

    /// The wire name (`trusted` / `untrusted`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Trusted => "trusted",
            Self::Untrusted => "untrusted",
        }
    }

    /// Parses a wire name.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "trusted" => Some(Self::Trusted),
            "untrusted" => Some(Self::Untrusted),
            _ => None,
        }
    }

    /// The meet of two trust levels: untrusted as soon as either is.
    pub fn meet(self, other: Self) -> Self {
        if self == Self::Untrusted || other == Self::Untrusted {
            Self::Untrusted
        } else {
            Self::Trusted
        }
    }
}
