//! Texts numbered as a scan meets them, and renumbered in their sorted order: how the task
//! clusters, the task ranks and the statistics hold many repeated strings as 4-byte numbers.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};

/// The number of `key` in `map`, a new one (the count so far) the first time: the key is
/// copied only then.
pub(crate) fn number<K, Q, S>(map: &mut HashMap<K, u32, S>, key: &Q) -> u32
where
    K: Borrow<Q> + Hash + Eq,
    Q: ToOwned<Owned = K> + Hash + Eq + ?Sized,
    S: BuildHasher,
{
    if let Some(&n) = map.get(key) {
        return n;
    }
    let n = map.len() as u32;
    map.insert(key.to_owned(), n);
    n
}

/// Keys numbered in sorted order (bytes for strings, as SQLite's BINARY collation): the
/// sorted keys, and for each old number its new one.
pub(crate) fn renumber<K: Ord, S>(map: HashMap<K, u32, S>) -> (Vec<K>, Vec<u32>) {
    let mut items: Vec<(K, u32)> = map.into_iter().collect();
    items.sort_unstable();
    let mut old_to_new = vec![0u32; items.len()];
    for (new, (_, old)) in items.iter().enumerate() {
        old_to_new[*old as usize] = new as u32;
    }
    (items.into_iter().map(|(k, _)| k).collect(), old_to_new)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Synthetic: numbers follow first sight; renumbering follows byte order.
    #[test]
    fn numbered_as_met_renumbered_as_sorted() {
        let mut map: HashMap<String, u32> = HashMap::new();
        let seen: Vec<u32> = ["b", "a", "b", "Z", "a"].iter().map(|t| number(&mut map, *t)).collect();
        assert_eq!(seen, [0, 1, 0, 2, 1]);
        let (sorted, old_to_new) = renumber(map);
        assert_eq!(sorted, ["Z", "a", "b"]);
        assert_eq!(old_to_new, [2, 1, 0]);
    }
}
