//! The matchers a check is written with: [`Matcher`] (one expectation over one JSON value,
//! a single-member object such as `{"equals": …}`), the [`Condition`] that applies one at a
//! pointer (in `repeat`'s `until`, `asJson`, `some`, `none`, `each`'s `where`, a data
//! mutant's `when`), and their parts. The shapes mirror `schemas/scenario.schema.json`;
//! `expect::matcher` evaluates them. The matcher vocabulary is documented in
//! `docs/authoring/matchers.md`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a check expects of the value its pointer names: one matcher, written as a
/// single-member object (`{"equals": …}`) and evaluated exactly by `expect::matcher`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Matcher {
    /// Deep equality with the given JSON value (templated).
    Equals(Value),
    /// The pointer names nothing (the value must be `true`).
    Absent(bool),
    /// The pointer names something (the value must be `true`).
    Present(bool),
    /// A string matching the regular expression.
    Matches(String),
    /// Equal to one of the alternatives.
    OneOf(Vec<Value>),
    /// Present and equal to none of the alternatives (e.g. a typed failure code that is not
    /// the catch-all `internal_error`).
    NotOneOf(Vec<Value>),
    /// A string that is a registered v2 error code, a code the tool-turn contract requires, or
    /// a vendor code `<org>.<code>` (HOOKS-FAIL-7, stance C-12; the value must be `true`).
    RegisteredErrorCode(bool),
    /// JSON type: `string`, `number`, `integer`, `boolean`, `object`, `array`, `null`.
    Type(String),
    /// A number ≥ the bound.
    AtLeast(Bound),
    /// A number ≤ the bound.
    AtMost(Bound),
    /// Deep equality with the value at another pointer.
    EqualsAt(String),
    /// Deep equality with the value at another pointer once the listed pointers are removed
    /// from both sides; for two arrays, from every item (RPL-6: a fork's inherited events equal
    /// the source's but for run ids, event ids, clocks and the fork annotation).
    EqualsAtIgnoring(IgnoringSpec),
    /// The serialized value does not contain the (templated) text anywhere.
    NotContains(String),
    /// Lowercase hex SHA-256 of the RFC 8785 form of the value at the other pointer.
    JcsSha256Of(String),
    /// Not the SHA-256 of the RFC 8785 form of the value at the other pointer.
    NotJcsSha256Of(String),
    /// A v2 error envelope (closed `{error, message, details?}`) with this `error` code.
    ErrorEnvelope(String),
    /// Valid against one of toolcert's embedded shape schemas (ERR-1, ERR-4).
    ConformsTo(Shape),
    /// An HTTP answer whose `body.error` has a registered status, sent with that status (ERR-2;
    /// the value must be `true`).
    RegisteredStatus(bool),
    /// An RFC 3339 date or date-time at most `days` days before the instant at another pointer
    /// (MCP-4: `/discovery/checkedAt`, toolcert's clock, recorded so a re-check agrees).
    WithinDaysBefore(DaysSpec),
    /// A `YYYY-MM-DD` date no later than the date at another pointer (MCP-3:
    /// `minimumRevision` ≤ `preferredVersion`).
    DateNotAfter(String),
    /// An array with no item repeated (the value must be `true`; DISC-8 `sources[]`).
    Distinct(bool),
    /// A discovery document none of whose records offers a facet as `false` (DISC-3; the
    /// value must be `true`).
    NoFalseFacets(bool),
    /// A non-empty array each of whose items satisfies the inner check.
    Each(Box<EachSpec>),
    /// Equal to one item of the array at another pointer.
    MemberOf(String),
    /// Absent, or present and satisfying the inner matcher (optional fields).
    IfPresent(Box<Matcher>),
    /// The inner matcher does not hold (an absent value fails any matcher but `absent`, and so
    /// satisfies `not` of it). Inside `none`, it names the items to look for: "a 409 whose
    /// body is not the in-flight envelope".
    Not(Box<Matcher>),
    /// An object whose keys are all in the list (closed shapes).
    KeysIn(Vec<String>),
    /// A string containing the (templated) text.
    Contains(String),
    /// A string that parses as JSON and satisfies the inner check (e.g. a tool result's text).
    AsJson(Box<Condition>),
    /// An array with at least one item satisfying every inner check.
    Some(Vec<Condition>),
    /// An array with no item satisfying every inner check (an empty array satisfies it).
    None(Vec<Condition>),
    /// A non-empty array whose items are all equal (the value must be `true`).
    AllEqual(bool),
    /// An array whose length satisfies the inner matcher.
    Length(Box<Matcher>),
    /// Valid against one of toolcert's embedded wire schemas (`tool-descriptor`,
    /// `compact-tool-descriptor`; see `schemas/`).
    Schema(String),
    /// An array ordered by the string at this pointer in each item (code-point order).
    SortedBy(String),
    /// An array no two of whose items share the string at this pointer.
    UniqueBy(String),
    /// An array whose items' strings at `by` form the same set as those of the array at `at`.
    SameSetAt(SameSetSpec),
    /// No object anywhere in the value has a member with one of these names.
    NoKeyAnywhere(Vec<String>),
    /// A tool descriptor whose `annotations`, when present, hold the four hints derived from
    /// its `safetyTier`, `replayPolicy` and `egress`, and no `title` (the value must be `true`).
    AnnotationsDerived(bool),
    /// A host-minted id whose opaque segment's estimated entropy in bits (see
    /// [`crate::expect::ids`]) satisfies the inner matcher (MCP-14: a `taskId` carries at least
    /// 128 bits).
    EntropyBits(Box<Matcher>),
    /// The same id as the string at another pointer once identity.md §5's projection (`~XX`)
    /// is undone on both (MCP-14: `taskId` is the run's projected `runId`).
    SameIdAt(String),
}

/// A shape schema embedded in toolcert (`schemas/<name>.schema.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    /// The closed v2 HTTP error envelope (`schemas/error-envelope.schema.json`).
    ErrorEnvelope,
    /// An error object inside an event (`schemas/event-error.schema.json`).
    EventError,
}

/// `each`: a matcher applied at a pointer in every item of an array, or only in the items a
/// `where` condition holds for (a scenario judges its own entries of a list other scenarios
/// add theirs to in parallel).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EachSpec {
    /// JSON pointer into each item.
    pub at: String,
    /// The expectation.
    pub expect: Matcher,
    /// Only the items this holds for (pointer into the item); at least one must.
    #[serde(default, rename = "where", skip_serializing_if = "Option::is_none")]
    pub only: Option<Condition>,
}

/// A matcher applied at a pointer, used by `repeat`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Condition {
    /// JSON pointer.
    pub at: String,
    /// The expectation.
    pub expect: Matcher,
}

/// A numeric bound: a number, or a placeholder that renders to one
/// (`"{{facts.rateLimitCapacity}}"`, a value only the host profile can state).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Bound {
    /// A literal number.
    Number(f64),
    /// A `{{path}}` placeholder.
    Template(String),
}

/// `withinDaysBefore`: the instant to measure from, and the window.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DaysSpec {
    /// Pointer to an RFC 3339 instant (toolcert's clock).
    pub at: String,
    /// The window, in whole days.
    pub days: u32,
}

/// An expectation over one JSON value. Exactly one key, e.g. `{"equals": "forbidden"}`.
/// `equalsAtIgnoring`: the other value, and what not to compare.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IgnoringSpec {
    /// Pointer to the value to compare with.
    pub at: String,
    /// Pointers (relative to each compared value, or to each item of two arrays) left out.
    pub ignore: Vec<String>,
}

/// `sameSetAt`: the other list, and the key compared.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SameSetSpec {
    /// Pointer to the array to compare with.
    pub at: String,
    /// Pointer (relative to each item) to the string compared.
    pub by: String,
    /// When given, only strings containing this (templated) text are compared, so a
    /// scenario compares its own tools while other scenarios register theirs in parallel.
    #[serde(default)]
    pub containing: Option<String>,
}
