//! VS Code's chat session mutation log (`chatSessions/<id>.jsonl`, VS Code's
//! `objectMutationLog.ts`): a first line `{"kind": 0, "v": <session>}`, then `kind` 1 (set
//! `v` at path `k`), 2 (push the items of `v` onto the array at `k`, cutting it to length
//! `i` first when `i` is given) and 3 (delete `k`). Replaying the lines gives the session
//! object the JSON form holds.

use serde_json::{Map, Value};

use crate::claude_code::parse_lines;
use crate::rejection::{schema, Problem};

/// The session a mutation log ends with; a line that does not apply rejects the file,
/// naming the line and field.
pub(super) fn replay(bytes: &[u8]) -> Result<Map<String, Value>, Problem> {
    let mut state: Option<Value> = None;
    for mut line in parse_lines(bytes)? {
        let at = |field: &str| format!("$[line {}].{field}", line.no);
        let kind = line.obj.get("kind").and_then(Value::as_u64);
        let value = line.obj.remove("v");
        let Some(state) = state.as_mut().filter(|_| kind != Some(0)) else {
            match (kind, value) {
                (Some(0), Some(v)) => state = Some(v),
                (Some(0), None) => return Err(violation(at("v"), "the initial (kind 0) line has no v")),
                _ => return Err(violation(at("kind"), "the log must open with an initial (kind 0) line")),
            }
            continue;
        };
        let path = match line.obj.get("k") {
            Some(Value::Array(k)) => k.as_slice(),
            _ => return Err(violation(at("k"), "a change needs its path k (an array)")),
        };
        let applied = match (kind, path.split_last()) {
            // An empty path is ignored, as VS Code ignores it.
            (Some(1 | 3), None) => Ok(()),
            (Some(1), Some((last, parents))) => set(state, parents, last, value.unwrap_or(Value::Null)),
            (Some(3), Some((last, parents))) => delete(state, parents, last),
            (Some(2), _) => push(state, path, value, line.obj.get("i")),
            _ => return Err(violation(at("kind"), "kind must be 0, 1, 2 or 3")),
        };
        applied.map_err(|why| violation(at("k"), why))?;
    }
    match state {
        Some(Value::Object(session)) => Ok(session),
        Some(_) => Err(violation("$[line 1].v".into(), "the session must be a JSON object")),
        None => Err(violation("$".into(), "an empty mutation log")),
    }
}

fn violation(path: String, message: &str) -> Problem {
    schema(path, message)
}

/// The container a path leads to: object members by string, array items by index.
fn walk<'a>(mut v: &'a mut Value, path: &[Value]) -> Result<&'a mut Value, &'static str> {
    for seg in path {
        v = match (v, seg) {
            (Value::Object(m), Value::String(k)) => m.get_mut(k.as_str()).ok_or("the path names no member")?,
            (Value::Array(a), Value::Number(n)) => {
                let i = n.as_u64().and_then(|i| usize::try_from(i).ok()).ok_or("a bad array index")?;
                a.get_mut(i).ok_or("an array index past the end")?
            }
            _ => return Err("the path does not fit the session"),
        };
    }
    Ok(v)
}

fn set(state: &mut Value, parents: &[Value], last: &Value, value: Value) -> Result<(), &'static str> {
    match (walk(state, parents)?, last) {
        (Value::Object(m), Value::String(k)) => {
            m.insert(k.clone(), value);
        }
        (Value::Array(a), Value::Number(n)) => match n.as_u64().and_then(|i| usize::try_from(i).ok()) {
            Some(i) if i < a.len() => a[i] = value,
            Some(i) if i == a.len() => a.push(value),
            _ => return Err("an array index past the end"),
        },
        _ => return Err("the path does not fit the session"),
    }
    Ok(())
}

fn delete(state: &mut Value, parents: &[Value], last: &Value) -> Result<(), &'static str> {
    match (walk(state, parents)?, last) {
        (Value::Object(m), Value::String(k)) => {
            m.remove(k.as_str());
        }
        // VS Code sets a deleted array item to undefined, which JSON writes as null.
        (Value::Array(a), Value::Number(n)) => {
            if let Some(item) = n.as_u64().and_then(|i| usize::try_from(i).ok()).and_then(|i| a.get_mut(i)) {
                *item = Value::Null;
            }
        }
        _ => return Err("the path does not fit the session"),
    }
    Ok(())
}

/// Kind 2: the array at `path` (created when missing) cut to `i` items when `i` is given,
/// then the items of `v` appended.
fn push(state: &mut Value, path: &[Value], items: Option<Value>, cut: Option<&Value>) -> Result<(), &'static str> {
    let (last, parents) = path.split_last().ok_or("a push needs a path")?;
    let target = match (walk(state, parents)?, last) {
        (Value::Object(m), Value::String(k)) => m.entry(k.clone()).or_insert_with(|| Value::Array(Vec::new())),
        (parent, _) => walk(parent, std::slice::from_ref(last))?,
    };
    if target.is_null() {
        *target = Value::Array(Vec::new());
    }
    let Value::Array(arr) = target else { return Err("a push onto something that is not an array") };
    if let Some(i) = cut {
        let i = i.as_u64().and_then(|i| usize::try_from(i).ok()).ok_or("i must be an array length")?;
        arr.truncate(i);
    }
    match items {
        Some(Value::Array(items)) => arr.extend(items),
        None | Some(Value::Null) => {}
        Some(_) => return Err("the pushed v must be an array"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::replay;

    fn log(lines: &[serde_json::Value]) -> Vec<u8> {
        lines.iter().map(|l| format!("{l}\n")).collect::<String>().into_bytes()
    }

    #[test]
    fn set_push_cut_and_delete_replay_in_order() {
        let bytes = log(&[
            json!({"kind": 0, "v": {"requests": [{"response": [1]}], "title": "a"}}),
            json!({"kind": 2, "k": ["requests", 0, "response"], "v": [2, 3]}),
            json!({"kind": 2, "k": ["requests", 0, "response"], "v": [4], "i": 1}),
            json!({"kind": 1, "k": ["requests", 0, "result"], "v": {"errorDetails": {"message": "Canceled"}}}),
            json!({"kind": 2, "k": ["requests"], "v": [{"requestId": "r2"}]}),
            json!({"kind": 3, "k": ["title"]}),
        ]);
        let s = replay(&bytes).expect("replays");
        assert_eq!(
            serde_json::Value::Object(s),
            json!({"requests": [{"response": [1, 4], "result": {"errorDetails": {"message": "Canceled"}}},
                {"requestId": "r2"}]})
        );
    }

    #[test]
    fn a_change_that_does_not_fit_names_its_line_and_field() {
        let no_initial = replay(&log(&[json!({"kind": 1, "k": ["a"], "v": 1})])).expect_err("no kind 0");
        assert_eq!(no_initial.json_path, "$[line 1].kind");
        let bad_path = replay(&log(&[
            json!({"kind": 0, "v": {"requests": []}}),
            json!({"kind": 1, "k": ["requests", 5, "x"], "v": 1}),
        ]))
        .expect_err("index past the end");
        assert_eq!(
            (bad_path.json_path.as_str(), bad_path.message.as_str()),
            ("$[line 2].k", "an array index past the end")
        );
        let bad_kind = replay(&log(&[json!({"kind": 0, "v": {}}), json!({"kind": 7, "k": []})])).expect_err("kind 7");
        assert_eq!(bad_kind.json_path, "$[line 2].kind");
    }
}
