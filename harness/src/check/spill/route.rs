//! Which partition a name belongs to.
//!
//! A key, a task, a job or a resource goes to the partition its name's
//! hash says; a delivery id is counted where its own hash says. The hash
//! is FNV-1a over the name's bytes, 64 bits: stable across processes,
//! machines and versions, so the processes of a check in partitions
//! (`hookstorm check --partition I/N`) agree on every key without talking
//! to each other. Of a hash `h`, the share of `N` processes is `h % N`
//! and, within a process, the local partition of `P` is `(h / N) % P`:
//! both use the whole hash, and neither decides the other.

use std::fmt;
use std::str::FromStr;

/// The most partitions a check is cut into, and the most processes of
/// `--partition I/N`.
pub const MAX_PARTITIONS: u32 = 4096;

/// FNV-1a, 64 bits.
pub(crate) fn hash(name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in name.as_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// One partition of N: `hookstorm check --partition I/N` (I from 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Partition {
    /// Which one, from 0.
    pub index: u32,
    /// Of how many.
    pub count: u32,
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Partition {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let expected =
            || format!("expected PARTITION like 0/4 (index from 0, below the count), got {s:?}");
        let (i, n) = s.split_once('/').ok_or_else(expected)?;
        let index: u32 = i.trim().parse().map_err(|_| expected())?;
        let count: u32 = n.trim().parse().map_err(|_| expected())?;
        if count == 0 || index >= count || count > MAX_PARTITIONS {
            return Err(expected());
        }
        Ok(Partition { index, count })
    }
}

/// Where a check sends a hash: this process's share of a partitioned
/// check (or everything), cut into `local` partitions.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Route {
    /// The share this process checks; `None`: all of it.
    pub share: Option<Partition>,
    /// Partitions within this process.
    pub local: u32,
}

impl Route {
    /// The local partition of `h`, or `None` when it is another process's.
    pub fn of(&self, h: u64) -> Option<u32> {
        let local = u64::from(self.local.max(1));
        match self.share {
            None => Some((h % local) as u32),
            Some(p) => {
                let n = u64::from(p.count);
                (h % n == u64::from(p.index)).then(|| ((h / n) % local) as u32)
            }
        }
    }

    /// Whether `h` is in this process's share.
    pub fn owns(&self, h: u64) -> bool {
        self.share
            .is_none_or(|p| h % u64::from(p.count) == u64::from(p.index))
    }

    /// The same partitions, with no share: for records every process
    /// hands on whole (to its own join partitions, or to the merge).
    pub fn whole(&self) -> Route {
        Route {
            share: None,
            local: self.local,
        }
    }

    /// The local partition of a name.
    pub fn name(&self, name: &str) -> Option<u32> {
        self.of(hash(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_fnv1a_and_never_changes() {
        // FNV-1a's published values.
        assert_eq!(hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(hash("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(hash("foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn every_name_has_one_share_and_one_local_partition() {
        for count in [1u32, 2, 7, 16] {
            for local in [1u32, 3, 8] {
                for n in 0..500 {
                    let h = hash(&format!("tsk_{n}"));
                    let owners: Vec<(u32, u32)> = (0..count)
                        .filter_map(|index| {
                            let r = Route {
                                share: Some(Partition { index, count }),
                                local,
                            };
                            r.of(h).map(|p| (index, p))
                        })
                        .collect();
                    assert_eq!(owners.len(), 1, "{count} {local} {n}");
                    assert!(owners[0].1 < local);
                }
            }
        }
    }

    #[test]
    fn partitions_parse_as_index_of_count() {
        assert_eq!(
            "2/8".parse::<Partition>(),
            Ok(Partition { index: 2, count: 8 })
        );
        for bad in ["", "2", "8/8", "1/0", "a/b", "-1/4", "1/100000"] {
            let e = bad.parse::<Partition>().unwrap_err();
            assert!(e.contains("expected PARTITION like 0/4"), "{bad}: {e}");
        }
    }
}
