//! OpenAI Responses API items as NeMo Gym rollouts and Codex sessions hold them: the rules
//! both readers apply to the same item kinds.

use trajkit_model::Role;

use crate::json::{content_text, Object};
use crate::rejection::{Problem, Reason};

/// The role of a message item that is not the assistant's. A `developer` message is a
/// system step (the reader keeps the source role in the step's `extra`).
pub(crate) fn message_role(role: &str, path: impl std::fmt::Display) -> Result<Role, Problem> {
    match role {
        "user" => Ok(Role::User),
        "system" | "developer" => Ok(Role::System),
        "tool" => Ok(Role::Tool),
        _ => Err(Problem::new(Reason::InvalidValue, format!("{path}.role"), format!("unknown message role '{role}'"))),
    }
}

/// The text of a reasoning item: its `content`, else its `summary` (text or text parts).
/// Both are removed from the item when there is one; otherwise the item stays whole.
pub(crate) fn take_reasoning(item: &mut impl Object) -> Option<String> {
    let text = reasoning_text(|key| item.get(key).and_then(content_text))?;
    item.remove_entry("summary");
    item.remove_entry("content");
    Some(text)
}

/// The reasoning rule on an item's members, whatever holds them: the text of `content`
/// (`text_of`), else of `summary`, the first that is not empty.
pub(crate) fn reasoning_text(text_of: impl Fn(&str) -> Option<String>) -> Option<String> {
    let text = |key: &str| text_of(key).filter(|t| !t.is_empty());
    text("content").or_else(|| text("summary"))
}
