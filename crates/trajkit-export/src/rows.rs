//! Export rows: a view of one record plus its metadata object. Outcome, reward and the
//! library's judgements live only in `Meta`, never in the messages a model sees.

use serde::Serialize;
use serde_json::Value;
use trajkit_library::Row;
use trajkit_model::Trajectory;

use crate::select::Purpose;
use crate::views::{self, Message, Notes};

/// `--view`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum View {
    Full,
    AssistantTurn,
}

impl std::str::FromStr for View {
    type Err = crate::ExportError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "full" => Ok(View::Full),
            "assistant-turn" => Ok(View::AssistantTurn),
            _ => Err(crate::ExportError::Usage(format!("--view {s:?}: expected full or assistant-turn"))),
        }
    }
}

impl View {
    pub fn as_str(self) -> &'static str {
        match self {
            View::Full => "full",
            View::AssistantTurn => "assistant-turn",
        }
    }
}

/// The conversation part of a row.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// Full view: every message with its weight.
    Full { messages: Vec<Message> },
    /// Assistant-turn view: the prior context and the decision.
    Turn { prompt: Vec<Message>, completion: Message },
}

/// Everything about a row that is not conversation (fixed keys, `null` when unknown, so
/// every row has the same shape).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Meta {
    pub trajectory_id: String,
    pub source: String,
    pub format: String,
    pub family: Option<String>,
    pub license: Option<String>,
    pub split: String,
    /// `training` or `evaluation`: an evaluation export says so on every row.
    pub purpose: Purpose,
    pub status: String,
    pub reward: Option<f64>,
    pub verification: String,
    pub quality_tier: u8,
    pub task_key: String,
    pub task_id: Option<String>,
    pub environment: Option<String>,
    pub model: Option<String>,
    pub scaffold: Option<String>,
    /// Assistant-turn view: 0-based index of the decision; `null` in the full view.
    pub turn: Option<u64>,
    /// Decisions (training targets) of the record in this view.
    pub turns: u64,
    /// Assistant-turn view: index of the decision's step in the canonical record.
    pub step_index: Option<u64>,
    /// Assistant-turn view: a context `replace` boundary came before this decision.
    pub context_reset: Option<bool>,
    pub context_boundaries: u64,
    pub copied_context_dropped: u64,
    pub non_text_parts: u64,
    pub subagent_steps: u64,
    /// Where the record came from (source path and line or document index).
    pub provenance: String,
}

/// One output row.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportRow {
    /// Full view: the library row id; assistant-turn view: `<row id>#<turn>`.
    pub id: String,
    pub body: Body,
    pub tools: Vec<Value>,
    pub meta: Meta,
}

fn meta(row: &Row, purpose: Purpose, notes: &Notes, turns: usize) -> Meta {
    let provenance = match (row.line, row.document_index) {
        (Some(l), _) => format!("{}:{l}", row.path),
        (None, Some(d)) => format!("{}#{d}", row.path),
        (None, None) => row.path.clone(),
    };
    Meta {
        trajectory_id: row.id.clone(),
        source: row.source.clone(),
        format: row.format.clone(),
        family: row.family.clone(),
        license: row.license.clone(),
        split: row.split.clone(),
        purpose,
        status: row.status.clone(),
        reward: row.reward,
        verification: row.verification.clone(),
        quality_tier: row.quality_tier,
        task_key: row.task_key.clone(),
        task_id: row.task_id.clone(),
        environment: row.environment.clone(),
        model: row.model.clone(),
        scaffold: row.scaffold.clone(),
        turn: None,
        turns: turns as u64,
        step_index: None,
        context_reset: None,
        context_boundaries: notes.context_boundaries,
        copied_context_dropped: notes.copied_context_dropped,
        non_text_parts: notes.non_text_parts,
        subagent_steps: notes.subagent_steps,
        provenance,
    }
}

/// The rows of one record in `view`. A record without any decision gives no row: it has
/// nothing to train on or to predict.
pub fn rows_of(row: &Row, t: &Trajectory, view: View, purpose: Purpose) -> Vec<ExportRow> {
    let tools = views::tools(t);
    match view {
        View::Full => {
            let v = views::full_view(t);
            if v.targets == 0 {
                return Vec::new();
            }
            let meta = meta(row, purpose, &v.notes, v.targets);
            vec![ExportRow { id: row.id.clone(), body: Body::Full { messages: v.messages }, tools, meta }]
        }
        View::AssistantTurn => {
            let (turns, notes) = views::assistant_turns(t);
            let base = meta(row, purpose, &notes, turns.len());
            turns
                .into_iter()
                .map(|turn| {
                    let mut meta = base.clone();
                    meta.turn = Some(turn.turn as u64);
                    meta.step_index = Some(turn.step_index as u64);
                    meta.context_reset = Some(turn.context_reset);
                    ExportRow {
                        id: format!("{}#{}", row.id, turn.turn),
                        body: Body::Turn { prompt: turn.prompt, completion: turn.completion },
                        tools: tools.clone(),
                        meta,
                    }
                })
                .collect()
        }
    }
}
