//! The interaction digest: what two records must share to be the same interaction,
//! whatever their ids, rewards, usage, timings or unmapped fields say (docs/library.md,
//! "Duplicate groups"). Exact-duplicate groups of the library are keyed by it.

use foldhash::{HashMap, HashMapExt};

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::canonical::hex;
use crate::lazy::LazyValue;
use crate::record::{Role, Step, Trajectory};

/// The task as the interaction sees it: its id, environment and instruction (not the
/// key, which may be a hash of the source bytes, nor the environment version).
#[derive(Serialize)]
struct TaskPart<'a> {
    environment: Option<&'a str>,
    id: Option<&'a str>,
    instruction: Option<&'a str>,
}

/// A call: name and arguments; its id is replaced by its position in the record.
#[derive(Serialize)]
struct CallPart<'a> {
    arguments: &'a LazyValue,
    name: &'a str,
}

/// A result: its content and the position of the call it answers (or the stated id
/// when it answers no call of the record, or nothing when it names none).
#[derive(Serialize)]
struct ResultPart<'a> {
    answers: Link<'a>,
    content: Option<&'a LazyValue>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Link<'a> {
    Call(usize),
    Unknown(&'a str),
    None,
}

/// A step: who speaks and what, in order; timestamps, usage, models, source ids and
/// unmapped fields are left out.
#[derive(Serialize)]
struct StepPart<'a> {
    content: Option<&'a LazyValue>,
    copied_context: bool,
    reasoning: Option<&'a str>,
    role: Role,
    subagent: bool,
    tool_calls: Vec<CallPart<'a>>,
    tool_results: Vec<ResultPart<'a>>,
}

/// The whole interaction: task, offered tools, steps and the subagents' own digests.
#[derive(Serialize)]
struct Interaction<'a> {
    steps: Vec<StepPart<'a>>,
    subagents: Vec<String>,
    task: TaskPart<'a>,
    tools: Option<&'a Vec<LazyValue>>,
}

/// SHA-256 (hex) of the record's interaction: the task (id, environment, instruction),
/// the offered tools, every step's role, content, reasoning, tool calls (name, arguments)
/// and tool results (content, and which call they answer by position), in order, and the
/// subagents' interactions. Ids, provenance, outcome, metrics, gaps, timestamps, models,
/// session ids and every `extra` are left out.
pub fn interaction_digest(t: &Trajectory) -> Result<String, serde_json::Error> {
    with_interaction(t, |bytes| hex(&Sha256::digest(bytes)))
}

/// `f` of the JSON the interaction digest hashes, written whole into the thread's scratch
/// buffer, so that it can be hashed with other messages
/// (`canonical::write_sealed_with_interaction`).
pub(crate) fn with_interaction<R>(t: &Trajectory, f: impl FnOnce(&[u8]) -> R) -> Result<R, serde_json::Error> {
    SCRATCH.with(|cell| {
        let mut bytes = cell.take();
        bytes.clear();
        let result = write_interaction(t, &mut bytes).map(|()| f(&bytes));
        if bytes.capacity() <= SCRATCH_KEPT {
            cell.replace(bytes);
        }
        result
    })
}

/// Appends the JSON the interaction digest hashes to `out` (the compact writer's bytes are
/// serde_json's), for a caller that hashes it with other messages (the pipeline's groups).
pub fn write_interaction(t: &Trajectory, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
    let subagents = t.subagents.iter().map(|s| interaction_digest(&s.trajectory)).collect::<Result<_, _>>()?;
    let mut positions: HashMap<&str, usize> = HashMap::new();
    let calls = t.steps.iter().flat_map(|s| s.tool_calls.iter());
    for (n, id) in calls.enumerate().filter_map(|(n, c)| c.id.as_deref().map(|id| (n, id))) {
        positions.entry(id).or_insert(n);
    }
    let interaction = Interaction {
        steps: t.steps.iter().map(|s| step_part(s, &positions)).collect(),
        subagents,
        task: TaskPart {
            environment: t.task.environment.as_deref(),
            id: t.task.id.as_deref(),
            instruction: t.task.instruction.as_deref(),
        },
        tools: t.tools.as_ref(),
    };
    crate::compact::to_writer(out, &interaction)
}

/// Largest scratch buffer a thread keeps between records (a larger one is freed).
const SCRATCH_KEPT: usize = 4 << 20;

thread_local! {
    /// The thread's buffer for an interaction's JSON. One grown from empty for every record
    /// was reallocated several times per record (1 % of `build`'s CPU on Gym lines).
    static SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

fn step_part<'a>(s: &'a Step, positions: &HashMap<&str, usize>) -> StepPart<'a> {
    StepPart {
        content: s.content.as_ref(),
        copied_context: s.copied_context,
        reasoning: s.reasoning.as_deref(),
        role: s.role,
        subagent: s.subagent,
        tool_calls: s.tool_calls.iter().map(|c| CallPart { arguments: &c.arguments, name: &c.name }).collect(),
        tool_results: s
            .tool_results
            .iter()
            .map(|r| ResultPart {
                answers: match r.call_id.as_deref() {
                    Some(id) => positions.get(id).map_or(Link::Unknown(id), |n| Link::Call(*n)),
                    None => Link::None,
                },
                content: r.content.as_ref(),
            })
            .collect(),
    }
}
