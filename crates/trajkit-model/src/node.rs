//! A JSON value a reader takes apart level by level: text that `json_text::split` already
//! took apart (each level checked once, in one pass), or a value (parsed, or kept as text
//! when the split did not reach it). Whatever the reader does not take apart ends up in the
//! record as text.

use std::borrow::Cow;

use serde_json::Value;

use crate::json_text::{Parts, Split};
use crate::{Extra, LazyValue};

/// A value on its way into a record.
pub enum Node<'a> {
    Split(Split<'a>),
    Value(LazyValue),
}

impl<'a> Node<'a> {
    /// The value, whole (text stays text).
    pub fn into_lazy(self) -> LazyValue {
        match self {
            Node::Split(split) => split_value(split),
            Node::Value(v) => v,
        }
    }

    /// Whether the value is `null` (without parsing text).
    pub fn is_null(&self) -> bool {
        match self {
            Node::Split(split) => split.text == "null",
            Node::Value(v) => v.is_null(),
        }
    }

    /// An object's members as `extra`, except the members named in `keys` (the last of each
    /// name), which are handed out as nodes of their own; the value itself when it is not an
    /// object.
    pub fn into_object<const N: usize>(self, keys: [&str; N]) -> Result<(Extra, [Option<Node<'a>>; N]), Value> {
        let mut taken = [(); N].map(|()| None);
        match self {
            Node::Split(Split { parts: Parts::Members(members), .. }) => {
                let mut rest = Vec::with_capacity(members.len());
                for (name, split) in members {
                    match keys.iter().position(|k| *k == name) {
                        Some(i) => taken[i] = Some(Node::Split(split)),
                        None => rest.push((name, split_value(split))),
                    }
                }
                Ok((Extra::from_texts(rest), taken))
            }
            other => {
                let mut extra = other.into_extra()?;
                for (slot, key) in taken.iter_mut().zip(keys) {
                    *slot = extra.remove_lazy(key).map(Node::Value);
                }
                Ok((extra, taken))
            }
        }
    }

    /// An object's members as `extra`; the value itself when it is not an object.
    pub fn into_extra(self) -> Result<Extra, Value> {
        match self {
            Node::Split(Split { parts: Parts::Members(members), .. }) => {
                Ok(Extra::from_texts(members.into_iter().map(|(name, split)| (name, split_value(split)))))
            }
            other => Extra::try_from(other.into_lazy()),
        }
    }

    /// An array's elements; the value itself when it is not an array.
    pub fn into_elements(self) -> Result<Vec<Node<'a>>, Value> {
        match self {
            Node::Split(Split { parts: Parts::Elements(elements), .. }) => {
                Ok(elements.into_iter().map(Node::Split).collect())
            }
            other => Ok(other.into_lazy().into_array()?.into_iter().map(Node::Value).collect()),
        }
    }

    /// The value as `Value`, borrowed when it is one (for comparing).
    pub fn value(&self) -> Cow<'_, Value> {
        match self {
            Node::Split(split) => Cow::Owned(crate::lazy::parse(split.text)),
            Node::Value(v) => Cow::Borrowed(v.value()),
        }
    }
}

/// A split value kept as text: its canonical form when the split wrote one or found it so.
#[inline]
fn split_value(split: Split<'_>) -> LazyValue {
    match split.parts {
        Parts::Canonical(canonical) | Parts::Numbers { canonical: Some(canonical), .. } => {
            LazyValue::from_canonical(canonical)
        }
        Parts::Verbatim => LazyValue::from_canonical(split.text.into()),
        _ => LazyValue::from_checked(split.text.into()),
    }
}

impl From<LazyValue> for Node<'_> {
    fn from(v: LazyValue) -> Self {
        Node::Value(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json_text::{split, Shape};
    use serde_json::json;

    const SHAPE: Shape = Shape::Object(&[("r", Shape::Object(&[("out", Shape::Array(&Shape::Object(&[])))]))]);

    /// Synthetic: a split row taken apart as the Gym reader does, against the same row
    /// parsed by serde_json; and the same steps on a parsed value (the fallback).
    #[test]
    fn split_and_parsed_rows_take_apart_alike() {
        // `a` and `r` repeated: the last of each is kept, as serde_json keeps it.
        let text = r#"{"a": 1, "r": {"id": "x", "out": [{"t": "m", "c": [{"x": "\n"}]}, 7], "z": null}, "r": {"out": [{"k": 2}]}, "a": [3]}"#;
        let whole: Value = serde_json::from_str(text).expect("valid");
        let split_row = Node::Split(split(text, &SHAPE).expect("accepted"));
        let parsed_row = Node::Value(whole.clone().into());
        for row in [split_row, parsed_row] {
            let (extra, [r, missing]) = row.into_object(["r", "none"]).expect("an object");
            assert!(missing.is_none());
            assert_eq!(
                extra.into_map(),
                whole
                    .as_object()
                    .cloned()
                    .map(|mut o| {
                        o.remove("r");
                        o
                    })
                    .unwrap_or_default()
            );
            let (r, [out]) = r.expect("r").into_object(["out"]).expect("an object");
            assert_eq!(r.len(), 0, "the last `r` wins");
            let items = out.expect("out").into_elements().expect("an array");
            let items: Vec<_> = items.into_iter().map(|i| i.into_extra().map(Extra::into_map)).collect();
            assert_eq!(items, vec![Ok(json!({"k": 2}).as_object().cloned().unwrap_or_default())]);
        }
        let node = Node::Split(split(r#"{"r": {"out": [{"c": 1}, 7]}}"#, &SHAPE).expect("accepted"));
        let (_, [r]) = node.into_object(["r"]).expect("an object");
        let (_, [out]) = r.expect("r").into_object(["out"]).expect("an object");
        let items: Vec<_> = out.expect("out").into_elements().expect("an array");
        assert_eq!(items.iter().map(|i| i.value().into_owned()).collect::<Vec<_>>(), vec![json!({"c": 1}), json!(7)]);
        let kinds: Vec<_> = items.into_iter().map(|i| i.into_extra().is_ok()).collect();
        assert_eq!(kinds, vec![true, false]);
        assert!(Node::Value(json!(null).into()).is_null());
        assert!(Node::Split(split("null", &SHAPE).expect("accepted")).is_null());
    }
}
