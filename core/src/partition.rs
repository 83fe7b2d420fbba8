//! Partitions: `toolcert run --partition K/N` runs a stable share of the scenarios, so N CI
//! jobs can certify one host in parallel and `toolcert merge` can join their reports.
//!
//! Like `cargo nextest --partition count:K/N`: the selected scenario ids (after filters and
//! `--skip`) are sorted, and shard K takes those whose index i satisfies `i % N == K - 1`.
//! The share depends only on the ids, never on timing or the seed, so every job agrees on it
//! and the N shards together run every selected scenario exactly once.

use serde::{Deserialize, Serialize};

/// One shard: `index` of `count`, 1-based like the flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Partition {
    /// K, from 1 to `count`.
    pub index: u32,
    /// N, at least 1.
    pub count: u32,
}

/// A `--partition` value that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("--partition {given:?}: {why}; expected K/N with 1 <= K <= N, e.g. --partition 2/3")]
pub struct PartitionError {
    /// What was given.
    pub given: String,
    /// What is wrong with it.
    pub why: String,
}

impl std::str::FromStr for Partition {
    type Err = PartitionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |why: &str| PartitionError {
            given: s.to_string(),
            why: why.to_string(),
        };
        // `count:K/N` is accepted too, so a nextest habit does not fail.
        let body = s.strip_prefix("count:").unwrap_or(s);
        let (k, n) = body.split_once('/').ok_or_else(|| err("no '/'"))?;
        let index: u32 = k
            .trim()
            .parse()
            .map_err(|_| err("K is not a whole number"))?;
        let count: u32 = n
            .trim()
            .parse()
            .map_err(|_| err("N is not a whole number"))?;
        if count == 0 {
            return Err(err("N is 0"));
        }
        if index == 0 || index > count {
            return Err(err("K is out of range"));
        }
        Ok(Partition { index, count })
    }
}

impl std::fmt::Display for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Partition {
    /// The ids of `ids` (any order) this shard runs, sorted.
    pub fn select<'a>(&self, ids: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
        let mut sorted: Vec<&str> = ids.into_iter().collect();
        sorted.sort_unstable();
        sorted.dedup();
        sorted
            .into_iter()
            .enumerate()
            .filter(|(i, _)| (*i as u64) % u64::from(self.count) == u64::from(self.index - 1))
            .map(|(_, id)| id)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_cover_every_id_exactly_once() {
        let ids = ["e", "a", "d", "c", "b", "f", "g"];
        let mut all: Vec<&str> = (1..=3)
            .flat_map(|k| Partition { index: k, count: 3 }.select(ids))
            .collect();
        all.sort_unstable();
        assert_eq!(all, ["a", "b", "c", "d", "e", "f", "g"]);
        assert_eq!(
            Partition { index: 1, count: 3 }.select(ids),
            ["a", "d", "g"]
        );
    }

    #[test]
    fn bad_values_say_what_is_wrong() {
        assert!("0/3".parse::<Partition>().is_err());
        assert!("4/3".parse::<Partition>().is_err());
        assert!("1/0".parse::<Partition>().is_err());
        assert!(
            "x".parse::<Partition>()
                .unwrap_err()
                .to_string()
                .contains("K/N")
        );
        assert_eq!(
            "count:2/3".parse::<Partition>(),
            Ok(Partition { index: 2, count: 3 })
        );
    }
}
