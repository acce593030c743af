//! The tool-call ids of one ATIF step, asked "is this id among them" once per result.

/// Ids held in place before a set is built: a step usually makes one or two calls.
const FEW: usize = 8;

/// The ids of one step's calls (or results). Up to `FEW` are scanned in place: no set is
/// allocated and hashed for the one or two calls of a usual step. Past that, a hash set
/// seeded per process (a file cannot choose ids that collide), so a step of many calls is
/// not quadratic.
pub(crate) enum CallIds<'a> {
    Few { ids: [&'a str; FEW], len: usize },
    Many(foldhash::HashSet<&'a str>),
}

impl<'a> CallIds<'a> {
    /// No ids.
    pub(crate) fn new() -> Self {
        CallIds::Few { ids: [""; FEW], len: 0 }
    }

    /// Adds `id` (a repeated id is held once in the set, maybe twice in place: either way
    /// `contains` answers the same).
    pub(crate) fn insert(&mut self, id: &'a str) {
        match self {
            CallIds::Few { ids, len } if *len < FEW => {
                if let Some(slot) = ids.get_mut(*len) {
                    *slot = id;
                    *len += 1;
                }
            }
            CallIds::Few { ids, .. } => {
                let mut set: foldhash::HashSet<&'a str> = ids.iter().copied().collect();
                set.insert(id);
                *self = CallIds::Many(set);
            }
            CallIds::Many(set) => {
                set.insert(id);
            }
        }
    }

    /// Whether `id` is one of the ids.
    pub(crate) fn contains(&self, id: &str) -> bool {
        match self {
            CallIds::Few { ids, len } => ids.iter().take(*len).any(|i| *i == id),
            CallIds::Many(set) => set.contains(id),
        }
    }
}

impl<'a> FromIterator<&'a str> for CallIds<'a> {
    fn from_iter<I: IntoIterator<Item = &'a str>>(iter: I) -> Self {
        let mut ids = CallIds::new();
        for id in iter {
            ids.insert(id);
        }
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::{CallIds, FEW};

    /// Synthetic (no real step makes more than a few calls): membership answered alike
    /// before and after the ids outgrow the place they are first held in, repeats included.
    #[test]
    fn answers_as_a_set_at_every_size() {
        let names: Vec<String> = (0..3 * FEW).map(|i| format!("call_{i}")).collect();
        for n in 0..names.len() {
            let mut ids: CallIds = names[..n].iter().map(String::as_str).collect();
            ids.insert(names[0].as_str());
            assert_eq!(matches!(ids, CallIds::Many(_)), n >= FEW, "{n} ids");
            for (i, name) in names.iter().enumerate() {
                assert_eq!(ids.contains(name), i < n.max(1), "{name} among {n}");
            }
            assert!(!ids.contains(""), "an empty id is never held");
        }
    }
}
