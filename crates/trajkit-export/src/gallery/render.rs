//! One example trajectory as a conversation: roles, collapsible reasoning, tool calls and
//! their results linked by id (anchors), nested collapsible subagents, badges and
//! provenance. Every string from the data goes through [`Html::text`]; long texts are
//! clipped with a visible marker; steps are capped; the whole example fits a byte budget.

use std::collections::{HashMap, HashSet};

use serde_json::Value;
use trajkit_library::Row;
use trajkit_model::{Authorship, Role, Step, Subagent, ToolCall, ToolResult, Trajectory};

use super::html::Html;

/// Caps applied to one example.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Steps rendered per conversation (the top level and each subagent).
    pub max_steps: usize,
    /// Characters kept of any one text (content, reasoning, arguments, result).
    pub max_text_chars: usize,
    /// Bytes of HTML for the whole example.
    pub budget: usize,
}

/// Subagents nested deeper than this are named, not rendered.
const MAX_DEPTH: usize = 3;
/// Content parts rendered per step.
const MAX_PARTS: usize = 20;
/// System messages longer than this are collapsed (system prompts are long and repeated).
const SYSTEM_OPEN_CHARS: u64 = 400;
/// Characters of a value in an example's header (paths, keys, ids).
const FACT_CHARS: usize = 300;
/// Characters of an example title.
const TITLE_CHARS: usize = 120;
/// Bytes kept free for closing markup and notes when deciding whether a block fits.
const RESERVE: usize = 1024;

/// Renders example number `n` (anchors are prefixed `e{n}-`).
pub fn example(n: u64, row: &Row, t: &Trajectory, limits: Limits) -> Html {
    let mut ctx = Ctx { n, limits, remaining: limits.budget, next_call: 0, next_sub: 0, anchored: HashSet::new() };
    let mut out = Html::new();
    out.raw("<article class=\"example\" id=\"e").num(n).raw("\">");
    header(&mut out, row, t, limits.max_text_chars);
    ctx.spend(out.len());
    let body = ctx.conversation(t, 0);
    out.append(&body).raw("</article>\n");
    out
}

/// The top-level steps of `t` as one fragment each (anchors prefixed `e{n}-`, gaps at
/// their step), for views that lay steps out themselves (the viewer's side-by-side).
/// Subagents are named, not nested; the steps past `max_steps` or the budget are left out.
pub fn step_blocks(n: u64, t: &Trajectory, limits: Limits) -> Vec<Html> {
    let mut ctx = Ctx { n, limits, remaining: limits.budget, next_call: 0, next_sub: 0, anchored: HashSet::new() };
    let shown = t.steps.len().min(limits.max_steps);
    let plan = ctx.plan(t, shown);
    let mut blocks = Vec::with_capacity(shown);
    for (i, step) in t.steps[..shown].iter().enumerate() {
        let mut block = ctx.step(i, step, &plan, t, true);
        gaps_at(&mut block, t, Some(i));
        if !ctx.fits(&block) {
            break;
        }
        blocks.push(block);
    }
    blocks
}

/// The gaps of `t` recorded at step `at` (`None`: those without a step), one list item each.
fn gaps_at(out: &mut Html, t: &Trajectory, at: Option<usize>) {
    for gap in t.gaps.iter().filter(|g| g.step == at) {
        out.raw("<li class=\"gap\"><span class=\"badge warn\">gap ").raw(gap.kind.as_str()).raw("</span> ");
        if let Some(detail) = &gap.detail {
            let (short, cut) = clip(detail, FACT_CHARS);
            out.text(short);
            if cut > 0 {
                out.raw("…");
            }
        }
        out.raw("</li>\n");
    }
}

/// The header of an example alone (title, badges, facts, provenance, instruction), for
/// views that place the conversation themselves.
pub fn header_html(row: &Row, t: &Trajectory, max_chars: usize) -> Html {
    let mut out = Html::new();
    header(&mut out, row, t, max_chars);
    out
}

fn header(out: &mut Html, row: &Row, t: &Trajectory, max_chars: usize) {
    out.raw("<header><h3 class=\"ex-title\">");
    title(out, t);
    out.raw("</h3>");
    badges(out, row);
    out.raw("<dl class=\"facts\">");
    let agent = [t.agent.name.as_deref(), t.agent.version.as_deref()].into_iter().flatten().collect::<Vec<_>>();
    if !agent.is_empty() {
        fact(out, "agent", &agent.join(" "));
    }
    if let Some(m) = &t.agent.model {
        fact(out, "model", m);
    }
    fact(out, "task key", &t.task.key);
    if let Some(env) = &t.task.environment {
        fact(out, "environment", env);
    }
    out.raw("<dt>size</dt><dd>").num(row.steps).raw(" steps · ").num(row.tool_calls).raw(" tool calls · ");
    out.num(row.subagents).raw(" subagents</dd>");
    out.raw("<dt>provenance</dt><dd><code>");
    clipped(out, &t.provenance.path, FACT_CHARS);
    if let Some(line) = t.provenance.line {
        out.raw(":").num(line);
    } else if let Some(doc) = t.provenance.document_index {
        out.raw("#").num(doc);
    }
    out.raw("</code> (").text(&t.provenance.format).raw(")</dd>");
    out.raw("<dt>record</dt><dd><code>").text(&row.shard).raw(":").num(row.shard_line).raw("</code> · id <code>");
    clipped(out, &t.id, FACT_CHARS);
    out.raw("</code></dd></dl>");
    if let Some(instruction) = &t.task.instruction {
        out.raw("<details class=\"instruction\"><summary>Task instruction</summary>");
        text_block(out, instruction, max_chars);
        out.raw("</details>");
    }
    out.raw("</header>");
}

/// The task id; else the first line of the instruction (clipped); else the task key.
fn title(out: &mut Html, t: &Trajectory) {
    let first_line = || t.task.instruction.as_deref().and_then(|i| i.lines().map(str::trim).find(|l| !l.is_empty()));
    let env = t.task.environment.as_deref().filter(|e| t.task.id.as_deref().is_some_and(|id| !id.contains(e)));
    if let Some(env) = env {
        out.text(env).raw(" · ");
    }
    let (kept, cut) = clip(t.task.id.as_deref().or_else(first_line).unwrap_or(&t.task.key), TITLE_CHARS);
    out.text(kept);
    if cut > 0 {
        out.raw("…");
    }
}

fn badges(out: &mut Html, row: &Row) {
    out.raw("<div class=\"badges\"><span class=\"badge status-");
    out.text(super::stats::Class::of(&row.status).name()).raw("\">").text(&row.status).raw("</span>");
    if let Some(r) = row.reward {
        out.raw("<span class=\"badge\">reward ").dec(r, 3).raw("</span>");
    }
    out.raw("<span class=\"badge verification\" title=\"who established the outcome\">").text(&row.verification);
    out.raw("</span><span class=\"badge\">split ").text(&row.split).raw("</span>");
    out.raw("<span class=\"badge\">tier ").num(u64::from(row.quality_tier)).raw("</span>");
    if !row.structural_valid {
        out.raw("<span class=\"badge warn\">structure: ");
        clipped(out, &row.structural_problems.join("; "), FACT_CHARS);
        out.raw("</span>");
    }
    for (kind, count) in &row.gaps {
        out.raw("<span class=\"badge warn\">gap ").text(kind).raw(" ×").num(*count).raw("</span>");
    }
    out.raw("</div>");
}

fn fact(out: &mut Html, name: &'static str, value: &str) {
    out.raw("<dt>").raw(name).raw("</dt><dd>");
    clipped(out, value, FACT_CHARS);
    out.raw("</dd>");
}

/// Keeps the first `max` characters of `s`; returns them and how many were cut.
pub fn clip(s: &str, max: usize) -> (&str, usize) {
    match s.char_indices().nth(max) {
        Some((at, _)) => (&s[..at], s[at..].chars().count()),
        None => (s, 0),
    }
}

/// Escaped text in a block (surrounding blank space not shown), clipped with a visible marker.
fn text_block(out: &mut Html, s: &str, max: usize) {
    out.raw("<div class=\"text\">");
    clipped(out, s.trim(), max);
    out.raw("</div>");
}

fn clipped(out: &mut Html, s: &str, max: usize) {
    let (kept, cut) = clip(s, max);
    out.text(kept);
    if cut > 0 {
        out.raw("<span class=\"trunc\">… [truncated: ").num(cut as u64).raw(" more characters]</span>");
    }
}

fn json_block(out: &mut Html, v: &Value, max: usize) {
    let pretty = serde_json::to_string_pretty(v).unwrap_or_default();
    out.raw("<pre class=\"json\">");
    clipped(out, &pretty, max);
    out.raw("</pre>");
}

/// A string, content parts (text shown, images named, others as JSON) or other JSON.
fn content(out: &mut Html, v: &Value, max: usize) {
    match v {
        Value::String(s) => text_block(out, s, max),
        Value::Array(parts) => {
            for part in parts.iter().take(MAX_PARTS) {
                content_part(out, part, max);
            }
            if parts.len() > MAX_PARTS {
                out.raw("<p class=\"note\">")
                    .num((parts.len() - MAX_PARTS) as u64)
                    .raw(" more content parts not shown</p>");
            }
        }
        other => json_block(out, other, max),
    }
}

fn content_part(out: &mut Html, part: &Value, max: usize) {
    if let Value::String(s) = part {
        return text_block(out, s, max);
    }
    if let Some(text) = part.get("text").and_then(Value::as_str) {
        return text_block(out, text, max);
    }
    let kind = part.get("type").and_then(Value::as_str).unwrap_or("");
    if kind.contains("image") {
        // Never an <img>: a URL or data URI from the data is not loaded.
        out.raw("<p class=\"note\">[").text(kind).raw(" part: not embedded]</p>");
        return;
    }
    json_block(out, part, max);
}

/// Anchor numbers of one conversation's calls and subagents.
struct Plan<'t> {
    /// Call number of each (step, call) of the rendered steps.
    call_numbers: Vec<Vec<u64>>,
    /// Call id → number and name of its first call.
    by_call_id: HashMap<&'t str, (u64, &'t str)>,
    /// Call ids that a result of the rendered steps answers.
    answered: HashSet<&'t str>,
    /// Subagent number of each subagent, in order.
    sub_numbers: Vec<u64>,
    /// Spawning call id → subagent number.
    sub_by_call: HashMap<&'t str, u64>,
    /// Subagent trajectory id → subagent number.
    sub_by_id: HashMap<&'t str, u64>,
}

struct Ctx {
    n: u64,
    limits: Limits,
    remaining: usize,
    next_call: u64,
    next_sub: u64,
    /// Call numbers whose result anchor is already on the page (one anchor per call).
    anchored: HashSet<u64>,
}

impl Ctx {
    fn spend(&mut self, bytes: usize) {
        self.remaining = self.remaining.saturating_sub(bytes);
    }

    /// Spends the block's bytes when it fits the budget (leaving the reserve).
    fn fits(&mut self, block: &Html) -> bool {
        if block.len() + RESERVE <= self.remaining {
            self.remaining -= block.len();
            true
        } else {
            false
        }
    }

    fn plan<'t>(&mut self, t: &'t Trajectory, shown: usize) -> Plan<'t> {
        let mut plan = Plan {
            call_numbers: Vec::with_capacity(shown),
            by_call_id: HashMap::new(),
            answered: HashSet::new(),
            sub_numbers: Vec::new(),
            sub_by_call: HashMap::new(),
            sub_by_id: HashMap::new(),
        };
        for step in &t.steps[..shown] {
            let mut numbers = Vec::with_capacity(step.tool_calls.len());
            for call in &step.tool_calls {
                self.next_call += 1;
                numbers.push(self.next_call);
                if let Some(id) = &call.id {
                    plan.by_call_id.entry(id).or_insert((self.next_call, &call.name));
                }
            }
            plan.call_numbers.push(numbers);
            plan.answered.extend(step.tool_results.iter().filter_map(|r| r.call_id.as_deref()));
        }
        for sub in &t.subagents {
            self.next_sub += 1;
            plan.sub_numbers.push(self.next_sub);
            if let Some(call) = &sub.spawned_by_tool_call {
                plan.sub_by_call.entry(call).or_insert(self.next_sub);
            }
            plan.sub_by_id.entry(&sub.trajectory.id).or_insert(self.next_sub);
        }
        plan
    }

    /// The steps of `t` (capped), each subagent after the step that spawned it.
    fn conversation(&mut self, t: &Trajectory, depth: usize) -> Html {
        let shown = t.steps.len().min(self.limits.max_steps);
        let plan = self.plan(t, shown);
        let mut out = Html::new();
        out.raw("<ol class=\"steps\">");
        self.spend(40); // <ol> and the note that may close the list
        let mut placed = vec![false; t.subagents.len()];
        let mut stopped = false;
        'steps: for (i, step) in t.steps[..shown].iter().enumerate() {
            let mut block = self.step(i, step, &plan, t, depth == 0);
            gaps_at(&mut block, t, Some(i));
            if !self.fits(&block) {
                stopped = true;
                break;
            }
            out.append(&block);
            for (j, sub) in t.subagents.iter().enumerate() {
                if sub.spawned_by_step == Some(i) && !placed[j] {
                    placed[j] = true;
                    if !self.subagent(&mut out, sub, plan.sub_numbers[j], depth) {
                        stopped = true;
                        break 'steps;
                    }
                }
            }
        }
        if stopped {
            out.raw("<li class=\"note\">The rest of this conversation is not shown: the page keeps each example within its size bound.</li>");
        } else if t.steps.len() > shown {
            out.raw("<li class=\"note\">").num((t.steps.len() - shown) as u64);
            out.raw(" more steps not shown (at most ").num(shown as u64).raw(" steps per conversation).</li>");
        }
        if t.steps.is_empty() {
            out.raw("<li class=\"note\">This trajectory has no steps.</li>");
        }
        if !stopped {
            let mut rest = Html::new();
            gaps_at(&mut rest, t, None);
            if self.fits(&rest) {
                out.append(&rest);
            }
        }
        for (j, sub) in t.subagents.iter().enumerate() {
            if !placed[j] && !stopped && !self.subagent(&mut out, sub, plan.sub_numbers[j], depth) {
                break;
            }
        }
        out.raw("</ol>");
        self.spend(200); // </ol> and the wrapper of a subagent
        out
    }

    /// A collapsible nested subagent; false when it did not fit the budget.
    fn subagent(&mut self, out: &mut Html, sub: &Subagent, number: u64, depth: usize) -> bool {
        let s = &sub.trajectory;
        let mut head = Html::new();
        head.raw("<li class=\"subagent-item\"><details class=\"subagent\" id=\"e").num(self.n).raw("-s").num(number);
        head.raw("\"><summary><span class=\"role\">subagent</span> ");
        head.text(s.agent.name.as_deref().unwrap_or("")).raw(" <code>").text(&s.id).raw("</code> · ");
        head.num(s.steps.len() as u64).raw(" steps");
        if let Some(step) = sub.spawned_by_step {
            head.raw(" · spawned by step ").num(step as u64 + 1);
        }
        if let Some(call) = &sub.spawned_by_tool_call {
            head.raw(" · by call <code>").text(call).raw("</code>");
        }
        head.raw("</summary>");
        if !self.fits(&head) {
            return false;
        }
        out.append(&head);
        if depth + 1 >= MAX_DEPTH {
            out.raw("<p class=\"note\">Nested deeper than ").num(MAX_DEPTH as u64).raw(" levels: not rendered.</p>");
        } else {
            let body = self.conversation(s, depth + 1);
            out.append(&body);
        }
        out.raw("</details></li>");
        true
    }

    /// One step; `anchored` gives it the id `e{n}-step{i}` (top level only: subagent
    /// step numbers repeat), so a search hit can link to it.
    fn step(&mut self, i: usize, step: &Step, plan: &Plan, t: &Trajectory, anchored: bool) -> Html {
        let max = self.limits.max_text_chars;
        let mut out = Html::new();
        out.raw("<li class=\"step role-").raw(step.role.as_str());
        if step.subagent {
            out.raw(" sidechain");
        }
        if step.copied_context {
            out.raw(" copied");
        }
        out.raw("\"");
        if anchored {
            out.raw(" id=\"e").num(self.n).raw("-step").num(i as u64).raw("\"");
        }
        out.raw(">");
        step_head(&mut out, i, step, t);
        if let Some(r) = &step.reasoning {
            out.raw("<details class=\"reasoning\"><summary>Reasoning · ").num(r.chars().count() as u64);
            out.raw(" characters</summary>");
            text_block(&mut out, r, max);
            out.raw("</details>");
        }
        if let Some(c) = &step.content {
            if step.role == Role::System && char_len(c) > SYSTEM_OPEN_CHARS {
                out.raw("<details class=\"system\"><summary>System prompt · ").num(char_len(c));
                out.raw(" characters</summary>");
                content(&mut out, c, max);
                out.raw("</details>");
            } else {
                content(&mut out, c, max);
            }
        }
        for (k, call) in step.tool_calls.iter().enumerate() {
            let number = plan.call_numbers.get(i).and_then(|v| v.get(k)).copied().unwrap_or(0);
            self.call(&mut out, call, number, plan);
        }
        for result in &step.tool_results {
            self.result(&mut out, result, plan);
        }
        out.raw("</li>\n");
        out
    }

    fn call(&self, out: &mut Html, call: &ToolCall, number: u64, plan: &Plan) {
        let max = self.limits.max_text_chars;
        out.raw("<div class=\"call\" id=\"e").num(self.n).raw("-c").num(number).raw("\"><div class=\"call-head\">");
        out.raw("<span class=\"kind\">call</span> <span class=\"fn\">").text(&call.name).raw("</span>");
        if let Some(id) = &call.id {
            out.raw(" <code class=\"cid\">").text(id).raw("</code>");
            match plan.by_call_id.get(id.as_str()) {
                Some(&(first, _)) if first != number => {
                    out.raw(" <span class=\"badge warn\">duplicate id</span>");
                }
                _ if plan.answered.contains(id.as_str()) => {
                    out.raw(" <a class=\"link\" href=\"#e").num(self.n).raw("-r").num(number).raw("\">result ↓</a>");
                }
                _ => {
                    out.raw(" <span class=\"badge warn\">no result</span>");
                }
            }
            if let Some(sub) = plan.sub_by_call.get(id.as_str()) {
                out.raw(" <a class=\"link\" href=\"#e").num(self.n).raw("-s").num(*sub).raw("\">subagent ↓</a>");
            }
        }
        if call.text_embedded {
            out.raw(" <span class=\"badge\">parsed from text</span>");
        }
        if call.arguments_invalid {
            out.raw(" <span class=\"badge warn\">arguments not JSON</span>");
        }
        out.raw("</div>");
        arguments(out, &call.arguments, max);
        out.raw("</div>");
    }

    fn result(&mut self, out: &mut Html, r: &ToolResult, plan: &Plan) {
        let call = r.call_id.as_deref().and_then(|id| plan.by_call_id.get(id).copied());
        out.raw("<div class=\"result\"");
        if let Some((number, _)) = call.filter(|(n, _)| self.anchored.insert(*n)) {
            out.raw(" id=\"e").num(self.n).raw("-r").num(number).raw("\"");
        }
        out.raw("><div class=\"call-head\"><span class=\"kind\">result</span>");
        match (call, &r.call_id) {
            (Some((number, name)), Some(id)) => {
                out.raw(" of <a class=\"link\" href=\"#e").num(self.n).raw("-c").num(number).raw("\">");
                out.text(name).raw(" ↑</a> <code class=\"cid\">").text(id).raw("</code>");
            }
            (None, Some(id)) => {
                out.raw(" <code class=\"cid\">")
                    .text(id)
                    .raw("</code> <span class=\"badge warn\">no matching call</span>");
            }
            _ => {
                out.raw(" <span class=\"badge\">no call id</span>");
            }
        }
        for sub_id in &r.subagent_refs {
            out.raw(" <span class=\"badge\">subagent ");
            match plan.sub_by_id.get(sub_id.as_str()) {
                Some(n) => {
                    out.raw("<a class=\"link\" href=\"#e").num(self.n).raw("-s").num(*n).raw("\">").text(sub_id);
                    out.raw("</a>");
                }
                None => {
                    out.text(sub_id).raw(" (not in this record)");
                }
            }
            out.raw("</span>");
        }
        out.raw("</div>");
        if let Some(c) = &r.content {
            content(out, c, self.limits.max_text_chars);
        }
        out.raw("</div>");
    }
}

fn step_head(out: &mut Html, i: usize, step: &Step, t: &Trajectory) {
    out.raw("<div class=\"step-head\"><span class=\"role\">").raw(step.role.as_str()).raw("</span>");
    out.raw("<span class=\"idx\">step ").num(i as u64 + 1).raw("</span>");
    if step.authorship == Authorship::Unknown {
        out.raw("<span class=\"badge warn\" title=\"the role is a transport role only\">authorship unknown</span>");
    }
    if step.copied_context {
        out.raw("<span class=\"badge\">copied context</span>");
    }
    if step.subagent {
        out.raw("<span class=\"badge\">subagent (interleaved)</span>");
    }
    if let Some(m) = step.model.as_deref().filter(|m| Some(*m) != t.agent.model.as_deref()) {
        out.raw("<span class=\"badge\">").text(m).raw("</span>");
    }
    if let Some(m) = &step.metrics {
        if let (Some(p), Some(c)) = (m.prompt_tokens, m.completion_tokens) {
            out.raw("<span class=\"tokens\">").num(p).raw(" → ").num(c).raw(" tokens</span>");
        }
    }
    if let Some(ts) = &step.timestamp {
        out.raw("<span class=\"ts\">").text(ts).raw("</span>");
    }
    out.raw("</div>");
}

/// Object arguments as name/value pairs (strings shown as text, so commands keep their
/// line breaks); anything else as JSON.
fn arguments(out: &mut Html, args: &Value, max: usize) {
    match args {
        Value::Object(map) if !map.is_empty() => {
            out.raw("<dl class=\"args\">");
            for (k, v) in map {
                out.raw("<dt>").text(k).raw("</dt><dd>");
                match v {
                    Value::String(s) => clipped(out, s, max),
                    other => clipped(out, &other.to_string(), max),
                }
                out.raw("</dd>");
            }
            out.raw("</dl>");
        }
        Value::Object(_) => {
            out.raw("<p class=\"note\">no arguments</p>");
        }
        Value::String(s) => text_block(out, s, max),
        other => json_block(out, other, max),
    }
}

fn char_len(v: &Value) -> u64 {
    match v {
        Value::String(s) => s.chars().count() as u64,
        other => other.to_string().chars().count() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_counts_characters_not_bytes() {
        assert_eq!(clip("héllo", 2), ("hé", 3));
        assert_eq!(clip("héllo", 5), ("héllo", 0));
        assert_eq!(clip("", 0), ("", 0));
    }
}
