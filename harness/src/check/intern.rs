//! Interns the checker's strings (accounts, keys, jobs, resources) as `u32`
//! ids.
//!
//! A million-attempt history has hundreds of thousands of distinct keys and
//! jobs. Every name lives in one arena string, and a hash table of bare
//! `u32` ids (hashbrown's `HashTable`, which compares and rehashes through
//! the arena) finds them, so interning costs no allocation per name and a
//! name costs its bytes plus about 13 bytes (its end offset and a table
//! slot), not a boxed copy and a map entry of hash and id (which, at a
//! million keys and their jobs, was 70 MB of table alone).

use std::hash::{Hash, Hasher};

use rustc_hash::FxHasher;

/// "No string" for interned ids; also "any account" in inbox indexes.
pub(crate) const NONE: u32 = u32::MAX;

/// Strings as `u32` ids, in the order they were first interned.
#[derive(Default)]
pub(crate) struct Interner {
    /// Every name, back to back.
    text: String,
    /// `ends[id]`: where name `id` ends in `text` (it starts where `id - 1` ends).
    ends: Vec<usize>,
    /// The ids, found by their names' hashes.
    table: hashbrown::HashTable<u32>,
}

fn hash(s: &str) -> u64 {
    let mut h = FxHasher::default();
    s.hash(&mut h);
    h.finish()
}

fn span<'a>(text: &'a str, ends: &[usize], id: u32) -> &'a str {
    let i = id as usize;
    let start = if i == 0 { 0 } else { ends[i - 1] };
    &text[start..ends[i]]
}

impl Interner {
    fn find(&self, h: u64, s: &str) -> Option<u32> {
        let (text, ends) = (&self.text, &self.ends);
        self.table.find(h, |&id| span(text, ends, id) == s).copied()
    }

    /// The id of `s`, interning it first if it is new.
    pub fn intern(&mut self, s: &str) -> u32 {
        let h = hash(s);
        if let Some(id) = self.find(h, s) {
            return id;
        }
        let id = self.ends.len() as u32;
        self.text.push_str(s);
        self.ends.push(self.text.len());
        let (text, ends) = (&self.text, &self.ends);
        self.table
            .insert_unique(h, id, |&id| hash(span(text, ends, id)));
        id
    }

    /// The id of `s`, if it was interned.
    #[cfg(test)]
    pub fn get(&self, s: &str) -> Option<u32> {
        self.find(hash(s), s)
    }

    /// The name of `id` (empty for [`NONE`]).
    pub fn name(&self, id: u32) -> &str {
        if id == NONE {
            return "";
        }
        span(&self.text, &self.ends, id)
    }

    /// How many names there are; their ids are `0..len()`.
    pub fn len(&self) -> usize {
        self.ends.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_intern_once_and_read_back_including_the_empty_one() {
        let mut i = Interner::default();
        let words = ["acct_a", "tsk_1", "", "tsk_1", "é😀", "acct_a", "tsk_10"];
        let ids: Vec<u32> = words.iter().map(|w| i.intern(w)).collect();
        assert_eq!(ids, [0, 1, 2, 1, 3, 0, 4]);
        assert_eq!(i.len(), 5);
        for (w, id) in words.iter().zip(&ids) {
            assert_eq!(i.name(*id), *w);
            assert_eq!(i.get(w), Some(*id));
        }
        assert_eq!(i.get("tsk_2"), None);
        assert_eq!(i.name(NONE), "");
    }

    #[test]
    fn many_names_that_differ_only_at_the_end_keep_their_own_ids() {
        // Keys like tsk_505f25fa0000000009: the same prefix, a counter at
        // the end; the table grows and rehashes many times on the way.
        let mut i = Interner::default();
        let names: Vec<String> = (0..200_000)
            .map(|n| format!("tsk_505f25fa{n:010}"))
            .collect();
        for (n, name) in names.iter().enumerate() {
            assert_eq!(i.intern(name), n as u32);
        }
        for (n, name) in names.iter().enumerate().step_by(997) {
            assert_eq!(i.intern(name), n as u32, "{name} again");
            assert_eq!(i.name(n as u32), name);
        }
        assert_eq!(i.get("tsk_505f25fa9999999999"), None);
    }
}
