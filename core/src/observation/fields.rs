//! Which fields each step kind's observation has, read off the observation structs
//! themselves (so the list cannot drift from what a step records), for the suite loader to
//! refuse a check pointer naming a field no step of that kind makes.
//!
//! The names come from serde: a derived `Deserialize` of a struct hands its (renamed) field
//! names to `Deserializer::deserialize_struct`; [`names_of`] asks with a deserializer that
//! only listens for them.

use serde::de::{self, DeserializeOwned, Visitor};
use serde::forward_to_deserialize_any;

use super::RepeatObservation;
use super::kinds::*;
use crate::suite::{HostActionKind, Step};

/// Where in the observation document a step records its observation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Root {
    /// `/steps/NAME`.
    Steps,
    /// `/receivers/NAME`.
    Receivers,
    /// `/providers/NAME`.
    Providers,
    /// `/mcpServers/NAME`.
    McpServers,
}

impl Root {
    /// The root's name in a pointer.
    pub fn name(self) -> &'static str {
        match self {
            Root::Steps => "steps",
            Root::Receivers => "receivers",
            Root::Providers => "providers",
            Root::McpServers => "mcpServers",
        }
    }
}

/// Where `step` records its observation, and the fields it has.
pub fn of_step(step: &Step) -> (Root, &'static [&'static str]) {
    match step {
        Step::Receiver(_) => (Root::Receivers, names_of::<ReceiverObservation>()),
        Step::Provider(_) => (Root::Providers, names_of::<ProviderObservation>()),
        Step::McpServer(_) => (Root::McpServers, names_of::<McpServerObservation>()),
        Step::Seam(_) => (Root::Steps, names_of::<SeamObservation>()),
        Step::Http(h) if h.abandon.is_some() => (Root::Steps, names_of::<AbandonObservation>()),
        Step::Http(_) => (Root::Steps, names_of::<HttpObservation>()),
        Step::Events(_) => (Root::Steps, names_of::<EventsObservation>()),
        Step::Discovery(_) => (Root::Steps, names_of::<DiscoveryObservation>()),
        Step::Repeat(_) => (Root::Steps, names_of::<RepeatObservation>()),
        Step::Foreach(_) => (Root::Steps, names_of::<ForeachObservation>()),
        Step::Burst(_) => (Root::Steps, names_of::<BurstObservation>()),
        Step::Host(h) => match h.action {
            HostActionKind::Kill => (Root::Steps, names_of::<KillObservation>()),
            HostActionKind::Restart => (Root::Steps, names_of::<RestartObservation>()),
        },
        Step::Release(_) => (Root::Steps, names_of::<ReleaseObservation>()),
        Step::Wait(_) => (Root::Steps, names_of::<WaitObservation>()),
        Step::FireEffectSeams(_) => (Root::Steps, names_of::<FireEffectSeamsObservation>()),
        Step::Catalog(_) => (Root::Steps, names_of::<CatalogObservation>()),
    }
}

/// The serialized field names of struct `T` (empty for a type that is not a struct).
pub fn names_of<T: DeserializeOwned>() -> &'static [&'static str] {
    let mut names = None;
    // The probe always ends the deserialization with an error, after listening.
    let _ = T::deserialize(Probe(&mut names));
    names.unwrap_or(&[])
}

/// A deserializer that records the field names it is asked for and produces nothing.
struct Probe<'n>(&'n mut Option<&'static [&'static str]>);

impl<'de> de::Deserializer<'de> for Probe<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("only a struct's field names are probed"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = Some(fields);
        Err(de::Error::custom("probed"))
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// Every key a serialized observation can have is a probed field, and the other way
    /// round: the probe and the JSON are the same list.
    fn same_keys<T: serde::Serialize + DeserializeOwned>(full: &T) {
        let names = names_of::<T>();
        let Value::Object(map) = serde_json::to_value(full).unwrap() else {
            panic!("not an object");
        };
        let mut keys: Vec<&str> = map.keys().map(String::as_str).collect();
        let mut names = names.to_vec();
        keys.sort_unstable();
        names.sort_unstable();
        assert_eq!(keys, names);
    }

    #[test]
    fn probed_fields_are_the_serialized_keys() {
        let http = HttpObservation {
            status: 200,
            headers: Default::default(),
            body: json!({}),
        };
        same_keys(&http);
        let seam = SeamObservation {
            http: HttpHead {
                status: 200,
                headers: Default::default(),
            },
            body: json!({}),
            run_id: Some(json!("r")),
            tool_called: Some(json!({})),
            tool_returned: Some(json!({})),
        };
        same_keys(&seam);
        same_keys(&AbandonObservation {
            abandoned: false,
            after_ms: 1,
            point: Some("p".into()),
            answer: Some(http.clone()),
        });
        same_keys(&DiscoveryObservation {
            first: http.clone(),
            etag: None,
            conditional: Some(http.clone()),
        });
        same_keys(&RepeatObservation {
            iterations: 1,
            statuses: vec![200],
            ok_count: 1,
            condition_met: true,
            first: None,
            last: Some(seam.clone()),
            met: super::super::NotObserved::blocked("b").into(),
        });
        same_keys(&EffectSeamRow {
            seam: "s".into(),
            fire_status: 200,
            parent_run_id: Some("r".into()),
            parent_run_status: Some(Value::Null),
            delivered_at_fire: Some(1),
            parent_effects: Some(1),
            fork_status: Some(200),
            fork_run_id: Some("f".into()),
            fork_run_status: Some(json!("completed")),
            fork_effects: Some(1),
            re_fires: Some(vec![]),
            delivered_by_fork: Some(0),
        });
        same_keys(&ReceiverObservation {
            url: json!("u"),
            url_via_unspecified: json!("u"),
            count: 0,
            idempotency_keys: Some(vec![]),
            distinct_idempotency_keys: Some(0),
            arrivals: vec![],
        });
        same_keys(&McpServerObservation {
            url: json!("u"),
            count: 0,
            calls: vec![],
            distinct_rpc_ids: Some(0),
            distinct_idempotency_keys: Some(0),
            requests: Some(0),
            protocol_versions: Some(vec![]),
            lists: Some(vec![]),
            problems: vec![],
        });
    }

    #[test]
    fn every_step_kind_has_fields() {
        assert_eq!(names_of::<WaitObservation>(), &["reached", "waitedMs"]);
        assert!(names_of::<EventsObservation>().contains(&"byConcept"));
        assert!(names_of::<Value>().is_empty());
    }
}
