//! Observations: what a step saw, typed, and "not observed" as a type of its own.
//!
//! Each step kind builds a serde struct ([`kinds`]); the scenario's observation document is
//! those structs serialized under `steps`, `receivers`, `providers` and `mcpServers`, because
//! templates and checks address it by JSON pointer while the scenario still runs, and reports
//! store it as JSON. An observation that could not be made is a [`NotObserved`]; its serde
//! form (`{"$blocked": reason, …}`) is the one stored reports have always had, so old reports
//! re-judge identically. This module is the only place that knows those keys, and the judge
//! looks for them only where toolcert records an observation ([`state_along`]): the same keys
//! anywhere in what a host sent are the host's data, never a disposition.
//!
//! [`fields`] says which fields each step kind's observation has, derived from the structs,
//! so the suite loader can refuse a check pointer naming a field no step of that kind makes.

pub mod fields;
pub mod kinds;

use serde::de::{self, DeserializeOwned};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

pub use kinds::*;

/// Why an observation could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unobserved {
    /// A fact about the host's setup (seam not wired, role not configured, a bound reached):
    /// checks reading it are `blocked`.
    Blocked,
    /// Transport or toolcert broke: checks reading it are `error`.
    Error,
    /// The host did something that fails every check reading it (a malformed provider
    /// request, a host that never came back).
    Fail,
}

impl Unobserved {
    /// Every state, in the order the judge asks for them.
    pub const ALL: [Unobserved; 3] = [Unobserved::Blocked, Unobserved::Error, Unobserved::Fail];

    /// The key of the serde form.
    fn key(self) -> &'static str {
        match self {
            Unobserved::Blocked => "$blocked",
            Unobserved::Error => "$error",
            Unobserved::Fail => "$fail",
        }
    }
}

/// What a not-made observation keeps beside its reason, for a reader of the report (no check
/// reads under it: a check reading the observation takes its state).
#[derive(Debug, Clone, PartialEq)]
pub enum Context {
    /// Nothing.
    None,
    /// An `events` read cut short by one of its bounds.
    Cut {
        /// Which bound stopped the read.
        truncated: Box<Truncation>,
        /// What was read before.
        partial: Box<PartialLog>,
    },
    /// An event poll that answered neither the log nor "not served".
    Poll {
        /// The answer.
        poll: Box<HttpObservation>,
    },
    /// A provider script whose requests the mock provider found malformed: what it saw.
    Provider(Box<ProviderObservation>),
    /// Members of a stored observation this toolcert does not know (kept for round trips).
    Other(Map<String, Value>),
}

/// An observation that could not be made: its state, why, and what was seen before.
#[derive(Debug, Clone, PartialEq)]
pub struct NotObserved {
    /// Blocked, error or fail.
    pub state: Unobserved,
    /// Why, in words a reader can act on.
    pub reason: String,
    /// What it keeps beside the reason.
    pub context: Context,
}

impl NotObserved {
    /// A `blocked` observation.
    pub fn blocked(reason: impl Into<String>) -> NotObserved {
        NotObserved::new(Unobserved::Blocked, reason)
    }

    /// An `error` observation.
    pub fn error(reason: impl Into<String>) -> NotObserved {
        NotObserved::new(Unobserved::Error, reason)
    }

    /// A `fail` observation.
    pub fn fail(reason: impl Into<String>) -> NotObserved {
        NotObserved::new(Unobserved::Fail, reason)
    }

    /// An observation in `state` for `reason`, with no context.
    pub fn new(state: Unobserved, reason: impl Into<String>) -> NotObserved {
        NotObserved {
            state,
            reason: reason.into(),
            context: Context::None,
        }
    }

    /// The same, keeping `context` beside the reason.
    pub fn with(mut self, context: Context) -> NotObserved {
        self.context = context;
        self
    }

    /// The serde form: `{"$blocked" | "$error" | "$fail": reason, …context}`.
    pub fn to_value(&self) -> Value {
        let mut map = match &self.context {
            Context::None => Map::new(),
            Context::Cut { truncated, partial } => {
                let mut m = Map::new();
                m.insert("truncated".into(), value_of(truncated));
                m.insert("partial".into(), value_of(partial));
                m
            }
            Context::Poll { poll } => {
                let mut m = Map::new();
                m.insert("poll".into(), value_of(poll));
                m
            }
            Context::Provider(seen) => match value_of(seen) {
                Value::Object(m) => m,
                _ => Map::new(),
            },
            Context::Other(m) => m.clone(),
        };
        map.insert(self.state.key().into(), Value::String(self.reason.clone()));
        Value::Object(map)
    }

    /// The state and reason of `node` if it is a not-made observation. A reason that is not a
    /// string reads as empty, as it always has.
    ///
    /// Only for a node toolcert recorded as an observation (see [`state_along`]): anywhere
    /// else the same keys are the host's data, never a verdict.
    pub fn state_of(node: &Value) -> Option<(Unobserved, String)> {
        // Only an object is one (a derived struct would also read an array, by position).
        if !node.is_object() {
            return None;
        }
        let marker = Marker::deserialize(node).ok()?;
        let (state, reason) = [
            (Unobserved::Blocked, marker.blocked),
            (Unobserved::Error, marker.error),
            (Unobserved::Fail, marker.fail),
        ]
        .into_iter()
        .find_map(|(s, r)| r.map(|r| (s, r)))?;
        Some((state, reason.as_str().unwrap_or("").to_string()))
    }
}

/// The roots of the observation document whose every member is one observation toolcert
/// recorded (a step's, a double's, a scenario variable's). A not-made observation stands only
/// there, or at a [`NESTED`] field of one.
pub const OBSERVATION_ROOTS: &[&str] = &["steps", "receivers", "providers", "mcpServers", "vars"];

/// Fields of an observation struct that are observations themselves
/// ([`RepeatObservation::met`]), and so may be not-made.
pub const NESTED: &[&str] = &["met"];

/// `repeat`: a seam call repeated until a condition held. Kept here beside [`Observation`],
/// not in its step kind's module (`crate::suite::step::repeat`) like the other observations
/// ([`kinds`] re-exports them): it holds an `Observation`, and this module imports `suite`
/// (the kinds [`NotObserved`] holds), so there the two would import each other.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RepeatObservation {
    /// Calls made.
    pub iterations: usize,
    /// Their statuses.
    pub statuses: Vec<u16>,
    /// How many the host reported `ok`.
    pub ok_count: u32,
    /// Whether an answer met the condition.
    pub condition_met: bool,
    /// The first answer.
    pub first: Option<SeamObservation>,
    /// The last answer.
    pub last: Option<SeamObservation>,
    /// The answer that met the condition; `blocked` when none did.
    pub met: Observation<SeamObservation>,
}

/// Where a check's pointer may meet a not-made observation: the recorded observation at
/// `/ROOT/NAME`, and its nested observation fields.
pub trait MarkerPositions {
    /// Whether `/root/name` is an observation toolcert recorded (one of [`OBSERVATION_ROOTS`],
    /// and for `vars` one whose value toolcert made, not one copied from the host).
    fn recorded(&self, root: &str, name: &str) -> bool;
    /// Whether `/root/name/field` is a nested observation of that one (a [`NESTED`] field of a
    /// step whose kind has it).
    fn nested(&self, root: &str, name: &str, field: &str) -> bool;
}

/// The state of the first not-made observation `pointer` passes through, looked for only at
/// the positions `at` names (typed positions, never by the shape of a node): whatever a host
/// sends sits deeper, under a field of an observation toolcert made, so no body, header,
/// event or arrival a host controls can carry a disposition, whatever keys it holds.
pub fn state_along(
    doc: &Value,
    pointer: &str,
    at: &impl MarkerPositions,
) -> Option<(Unobserved, String)> {
    let mut segments = pointer
        .split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"));
    let root = segments.next()?;
    let name = segments.next()?;
    if !OBSERVATION_ROOTS.contains(&root.as_str()) || !at.recorded(&root, &name) {
        return None;
    }
    let node = doc.get(&root)?.get(&name)?;
    if let Some(state) = NotObserved::state_of(node) {
        return Some(state);
    }
    let field = segments.next()?;
    if !at.nested(&root, &name, &field) {
        return None;
    }
    NotObserved::state_of(node.get(&field)?)
}

/// The keys of the serde form, read without the rest of the node.
#[derive(Deserialize)]
struct Marker {
    #[serde(rename = "$blocked")]
    blocked: Option<Value>,
    #[serde(rename = "$error")]
    error: Option<Value>,
    #[serde(rename = "$fail")]
    fail: Option<Value>,
}

/// A value's JSON form; serializing the observation structs cannot fail (string keys, no
/// floats that are not finite), and a failure would read as `null`, never a panic.
fn value_of<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

impl Serialize for NotObserved {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}

impl<'de> Deserialize<'de> for NotObserved {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<NotObserved, D::Error> {
        let value = Value::deserialize(d)?;
        let (state, reason) = NotObserved::state_of(&value)
            .ok_or_else(|| de::Error::custom("not a $blocked, $error or $fail observation"))?;
        let Value::Object(mut rest) = value else {
            return Err(de::Error::custom("an observation is an object"));
        };
        rest.remove(state.key());
        Ok(NotObserved {
            state,
            reason,
            context: context_of(state, rest),
        })
    }
}

/// The typed context of a stored not-made observation's other members.
fn context_of(state: Unobserved, rest: Map<String, Value>) -> Context {
    if rest.is_empty() {
        return Context::None;
    }
    let keys: Vec<&str> = rest.keys().map(String::as_str).collect();
    let typed = match (state, keys.as_slice()) {
        (Unobserved::Blocked, ["partial", "truncated"]) => (|| {
            Some(Context::Cut {
                truncated: serde_json::from_value(rest["truncated"].clone()).ok()?,
                partial: serde_json::from_value(rest["partial"].clone()).ok()?,
            })
        })(),
        (Unobserved::Fail, ["poll"]) => {
            serde_json::from_value(rest["poll"].clone())
                .ok()
                .map(|poll| Context::Poll {
                    poll: Box::new(poll),
                })
        }
        (Unobserved::Fail, _) if rest.contains_key("model") => {
            serde_json::from_value(Value::Object(rest.clone()))
                .ok()
                .map(|p| Context::Provider(Box::new(p)))
        }
        _ => None,
    };
    // Only a context that serializes back to the same members is taken as typed.
    match typed {
        Some(c)
            if NotObserved::new(state, "")
                .with(c.clone())
                .to_value()
                .as_object()
                .map(|m| {
                    m.iter()
                        .filter(|(k, _)| k.as_str() != state.key())
                        .eq(rest.iter())
                })
                == Some(true) =>
        {
            c
        }
        _ => Context::Other(rest),
    }
}

/// What one step (or double) recorded: the typed observation, or why it was not made.
#[derive(Debug, Clone, PartialEq)]
pub enum Observation<T> {
    /// The observation.
    Made(T),
    /// Why there is none.
    NotMade(NotObserved),
}

impl<T> Observation<T> {
    /// Why it was not made, if it was not.
    pub fn not_made(&self) -> Option<&NotObserved> {
        match self {
            Observation::Made(_) => None,
            Observation::NotMade(n) => Some(n),
        }
    }
}

impl<T: Serialize> Observation<T> {
    /// The JSON form recorded in the observation document.
    pub fn to_value(&self) -> Value {
        match self {
            Observation::Made(t) => serde_json::to_value(t).unwrap_or_else(|e| {
                NotObserved::error(format!("toolcert could not record the observation: {e}"))
                    .to_value()
            }),
            Observation::NotMade(n) => n.to_value(),
        }
    }
}

impl<T> From<NotObserved> for Observation<T> {
    fn from(n: NotObserved) -> Observation<T> {
        Observation::NotMade(n)
    }
}

impl<T: Serialize> Serialize for Observation<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Observation::Made(t) => t.serialize(s),
            Observation::NotMade(n) => n.serialize(s),
        }
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Observation<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Observation<T>, D::Error> {
        let value = Value::deserialize(d)?;
        if NotObserved::state_of(&value).is_some() {
            return serde_json::from_value(value)
                .map(Observation::NotMade)
                .map_err(de::Error::custom);
        }
        serde_json::from_value(value)
            .map(Observation::Made)
            .map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_serde_form_is_the_stored_one() {
        assert_eq!(
            NotObserved::blocked("seam not wired").to_value(),
            json!({"$blocked": "seam not wired"})
        );
        assert_eq!(
            serde_json::to_value(NotObserved::error("timeout")).unwrap(),
            json!({"$error": "timeout"})
        );
        let fail = NotObserved::fail("bad poll").with(Context::Poll {
            poll: Box::new(HttpObservation {
                status: 500,
                headers: Default::default(),
                body: json!({"x": 1}),
            }),
        });
        let v = fail.to_value();
        assert_eq!(
            v,
            json!({"$fail": "bad poll", "poll": {"status": 500, "headers": {}, "body": {"x": 1}}})
        );
        assert_eq!(serde_json::from_value::<NotObserved>(v).unwrap(), fail);
    }

    #[test]
    fn state_is_read_from_the_type_with_the_old_precedence() {
        let s = |v: Value| NotObserved::state_of(&v);
        assert_eq!(
            s(json!({"$error": "e", "$blocked": "b"})),
            Some((Unobserved::Blocked, "b".into()))
        );
        assert_eq!(
            s(json!({"$fail": 3})),
            Some((Unobserved::Fail, String::new()))
        );
        assert_eq!(s(json!({"count": 1})), None);
        assert_eq!(s(json!([1])), None);
        assert_eq!(s(json!(["a", "b", "c"])), None);
        assert_eq!(s(json!(null)), None);
    }

    #[test]
    fn unknown_context_round_trips() {
        let v = json!({"$blocked": "b", "extra": [1, 2]});
        let n: NotObserved = serde_json::from_value(v.clone()).unwrap();
        assert!(matches!(n.context, Context::Other(_)));
        assert_eq!(n.to_value(), v);
    }

    #[test]
    fn an_observation_is_its_struct_or_its_marker() {
        let made: Observation<WaitObservation> = Observation::Made(WaitObservation {
            reached: true,
            waited_ms: 3,
        });
        let v = made.to_value();
        assert_eq!(v, json!({"reached": true, "waitedMs": 3}));
        assert_eq!(
            serde_json::from_value::<Observation<WaitObservation>>(v).unwrap(),
            made
        );
        let not: Observation<WaitObservation> = NotObserved::blocked("no").into();
        assert_eq!(
            serde_json::from_value::<Observation<WaitObservation>>(not.to_value()).unwrap(),
            not
        );
    }
}
