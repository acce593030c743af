//! OpenCode sessions: its storage tree (a session info file with its message and part files,
//! see [`storage`]) and `opencode export` documents (`{info, messages: [{info, parts}]}`).
//! One session, one trajectory; child sessions (`parentID`, spawned by the `task` tool) nest
//! as subagents when the tree holds them. See docs/formats/opencode.md.

mod parts;
mod storage;

use serde_json::{Map, Value};
use trajkit_model::{canonical::sha256_hex, Agent, Gap, GapKind, Subagent, Trajectory};

use crate::input::InputFile;
use crate::json::{idx, take_str};
use crate::links::link_tool_results;
use crate::reader::{Detection, Layout, Peek, RawRecord, Reader, RecordResult};
use crate::rejection::{parse_record, schema, Problem};

/// Reader for OpenCode sessions.
pub struct OpenCodeReader;

const FAMILY: &str = "opencode";

impl Reader for OpenCodeReader {
    fn name(&self) -> &'static str {
        FAMILY
    }

    fn detect(&self, peek: &Peek) -> Option<Detection> {
        let doc = match peek.first_line {
            Some(v) => v,
            // A pretty-printed document (OpenCode writes both shapes indented): the peek's
            // one shared parse.
            None if peek.name.ends_with(".json") => peek.document()?,
            None => return None,
        };
        let m = doc.as_object()?;
        let session_id = |v: Option<&Value>| v.and_then(Value::as_str).is_some_and(|s| s.starts_with("ses_"));
        let claim = |reason: &str| Some(Detection { confidence: 90, reason: reason.into(), layout: Layout::Document });
        if m.get("messages").is_some_and(Value::is_array) && session_id(m.get("info").and_then(|i| i.get("id"))) {
            return claim("opencode export document (info.id ses_… + messages)");
        }
        let named =
            peek.name.strip_suffix(".json").is_some_and(|stem| m.get("id").and_then(Value::as_str) == Some(stem));
        if named && session_id(m.get("id")) && m.contains_key("projectID") && m.contains_key("time") {
            return claim("opencode session info file (ses_….json with id, projectID, time)");
        }
        None
    }

    fn referenced_files(&self, file: &InputFile, _layout: Layout) -> Vec<std::path::PathBuf> {
        storage::consumed(file)
    }

    fn expands(&self) -> bool {
        true
    }

    /// A session file of the storage tree is assembled with its messages, parts and child
    /// sessions; an export document is read as it is (`None`).
    fn expand_file(
        &self,
        file: &InputFile,
        bytes: &[u8],
        limit: usize,
        emit: &mut dyn FnMut(Result<Vec<u8>, Problem>) -> bool,
    ) -> Option<Result<(), String>> {
        if file.is_stdin() || file.fs_path.canonicalize().ok().as_deref().and_then(storage::root_of).is_none() {
            return None;
        }
        let mut problems = Vec::new();
        let record = storage::assemble(file, bytes, limit, &mut problems);
        for p in problems {
            if !emit(Err(p)) {
                return Some(Ok(()));
            }
        }
        let record =
            record.and_then(|r| if r.len() > limit { Err(crate::pipeline::too_large_problem(limit)) } else { Ok(r) });
        emit(record);
        Some(Ok(()))
    }

    fn read_record(&self, raw: &RawRecord, file: &InputFile) -> RecordResult {
        let result = match parse_record(raw.bytes) {
            Ok(Value::Object(doc)) => session(doc, raw.id(FAMILY), raw, file),
            Ok(_) => Err(schema("$", "a session must be a JSON object")),
            Err(p) => Err(p),
        };
        RecordResult::from_result(result)
    }
}

/// One session record (`{info, messages, trajkit:children}`) as trajectory `id`.
fn session(mut doc: Map<String, Value>, id: String, raw: &RawRecord, file: &InputFile) -> Result<Trajectory, Problem> {
    let mut info = match doc.remove("info") {
        Some(Value::Object(i)) => i,
        None if doc.contains_key("projectID") => {
            let msg = "a session info file outside OpenCode's storage tree (storage/session/<projectID>/<id>.json): \
                       its message and part files are not beside it";
            return Err(schema("$", msg));
        }
        _ => return Err(schema("$.info", "missing or not an object")),
    };
    let messages = match doc.remove("messages") {
        Some(Value::Array(m)) => m,
        _ => return Err(schema("$.messages", "missing or not an array")),
    };
    let mut steps = Vec::new();
    let mut gaps = Vec::new();
    let mut model: parts::Model = None;
    for (i, m) in messages.into_iter().enumerate() {
        parts::message(m, &idx("$.messages", i), &mut steps, &mut gaps, &mut model)?;
    }
    link_tool_results(&steps, &mut gaps);
    let task = crate::chat::first_user_task(&steps, raw.sha256);
    let mut t = Trajectory {
        agent: Agent {
            model: model.as_ref().map(|m| m.0.clone()),
            name: Some(FAMILY.into()),
            version: take_str(&mut info, "version"),
        },
        gaps,
        session_id: take_str(&mut info, "id"),
        steps,
        ..Trajectory::new(id, raw.provenance(FAMILY, file), task)
    };
    if let Some((_, Some(provider))) = model {
        t.extra.insert("providerID".into(), Value::String(provider));
    }
    if let Some(Value::Array(children)) = doc.remove(storage::CHILDREN) {
        for (k, c) in children.into_iter().enumerate() {
            let Value::Object(c) = c else { continue };
            // Derived from the parent's id, so that nested children never share one.
            let sub_id = format!("{FAMILY}-{}", &sha256_hex(format!("{}/{k}", t.id).as_bytes())[..16]);
            nest(&mut t, session(c, sub_id, raw, file)?);
        }
    }
    unresolved_tasks(&mut t);
    if t.steps.is_empty() {
        t.gaps.push(Gap { detail: None, kind: GapKind::NoSteps, step: None });
    }
    t.extra.extend(info);
    t.extra.extend(doc);
    Ok(t)
}

/// The `(step, call id)` of the `task` call whose result names child session `sid`.
fn spawner(t: &Trajectory, sid: &str) -> Option<(Option<usize>, String)> {
    let call =
        t.steps.iter().flat_map(|s| &s.tool_results).find(|r| parts::task_session(r) == Some(sid))?.call_id.clone()?;
    let step = t.steps.iter().position(|s| s.tool_calls.iter().any(|c| c.id.as_deref() == Some(call.as_str())));
    Some((step, call))
}

/// Nests a child session under the `task` call whose result names it (that result refers to
/// the subagent), or unattached when no call does.
fn nest(t: &mut Trajectory, sub: Trajectory) {
    let (step, call) = match sub.session_id.as_deref().and_then(|sid| spawner(t, sid)) {
        Some((step, call)) => (step, Some(call)),
        None => (None, None),
    };
    if let Some(c) = &call {
        for r in t.steps.iter_mut().flat_map(|s| s.tool_results.iter_mut()).filter(|r| r.call_id.as_ref() == Some(c)) {
            r.subagent_refs.push(sub.id.clone());
        }
    }
    t.subagents.push(Subagent { spawned_by_step: step, spawned_by_tool_call: call, trajectory: Box::new(sub) });
}

/// A `task` result whose child session is not nested (an export, or a tree without the
/// child's files) is an unresolved subagent reference.
fn unresolved_tasks(t: &mut Trajectory) {
    let nested: Vec<&str> = t.subagents.iter().filter_map(|s| s.trajectory.session_id.as_deref()).collect();
    let mut missing = Vec::new();
    for (i, s) in t.steps.iter().enumerate() {
        for sid in s.tool_results.iter().filter_map(parts::task_session).filter(|sid| !nested.contains(sid)) {
            missing.push(Gap::at(GapKind::UnresolvedSubagentRef, Some(i), format!("child session {sid}")));
        }
    }
    t.gaps.extend(missing);
}
