//! The causal views on real records: what a prompt holds before each decision, context
//! boundaries, copied context, masks and token data.

mod support;

use support::one;
use trajkit_export::views::{assistant_turns, full_view, MsgRole};

const CS17: &str = "atif/terminus2-context-summarization-v1.7/trajectory.json";
const LH17: &str = "atif/terminus2-linear-history-v1.7/trajectory.json";

#[test]
fn assistant_turn_prompts_hold_exactly_the_prior_context() {
    // Steps: 1 user, 2-4 agent (call + result), 5 system compaction boundary (replace),
    // 6 user handoff, 7-10 agent. Decisions are the 7 agent steps.
    let t = one(CS17);
    let (turns, notes) = assistant_turns(&t);
    let lens: Vec<usize> = turns.iter().map(|x| x.prompt.len()).collect();
    // before the boundary: user; +assistant+tool per earlier decision. After: the handoff only.
    assert_eq!(lens, [1, 3, 5, 1, 3, 5, 7]);
    let steps: Vec<usize> = turns.iter().map(|x| x.step_index).collect();
    assert_eq!(steps, [1, 2, 3, 6, 7, 8, 9]);
    let resets: Vec<bool> = turns.iter().map(|x| x.context_reset).collect();
    assert_eq!(resets, [false, false, false, true, true, true, true]);
    assert_eq!(notes.context_boundaries, 1);

    // After the boundary the replaced history is gone: the prompt is the handoff message.
    let after = &turns[3];
    assert_eq!(after.prompt[0].role, MsgRole::User);
    assert!(after.prompt[0].content.starts_with("Here are the answers the other agent provided."));
    let all: String = after.prompt.iter().map(|m| m.content.as_str()).collect();
    assert!(!all.contains("mkdir test_dir"), "pre-boundary history leaked");

    // The completion is the decision without its result; no later observation anywhere.
    let c = &turns[3].completion;
    assert_eq!(c.role, MsgRole::Assistant);
    assert_eq!(c.weight, 1);
    assert_eq!(c.tool_calls.len(), 1);
    assert_eq!(c.tool_calls[0].name, "bash_command");
    assert_eq!(c.tool_calls[0].id.as_deref(), Some("call_3_1"));
    assert_eq!(c.tool_calls[0].arguments, r#"{"duration":0.1,"keystrokes":"printf 'Hello, world!\\n' > hello.txt\n"}"#);
    for (k, turn) in turns.iter().enumerate() {
        let seen: String = turn.prompt.iter().map(|m| m.content.as_str()).collect();
        for later in &turns[k..] {
            assert!(!seen.contains(&later.completion.content), "turn {k} sees a later decision");
        }
        assert!(turn.prompt.iter().all(|m| m.weight == 0));
    }
    // Token ids and log probs of the generation ride on the completion (step 2: 682/60/60).
    let tok = turns[0].completion.tokens.as_ref().expect("tokens");
    let lens = (
        tok.prompt_token_ids.as_ref().map(Vec::len),
        tok.completion_token_ids.as_ref().map(Vec::len),
        tok.logprobs.as_ref().map(Vec::len),
    );
    assert_eq!(lens, (Some(682), Some(60), Some(60)));
}

#[test]
fn full_view_masks_decisions_and_drops_repeated_copied_context() {
    // Head (5 steps: user, 3 agent with terminal output, compaction boundary) + continuation
    // (4 copied-context steps: the original prompt again, handoff, questions, answers; then
    // 4 agent steps with output).
    let t = one(LH17);
    let v = full_view(&t);
    assert_eq!(v.notes.copied_context_dropped, 1, "the repeated original prompt");
    assert_eq!(v.notes.context_boundaries, 1);
    let roles: Vec<&str> = v.messages.iter().map(|m| m.role.as_str()).collect();
    let mut expected = vec!["user"];
    expected.extend(["assistant", "tool"].repeat(3));
    expected.extend(["system", "user", "assistant", "user"]);
    expected.extend(["assistant", "tool"].repeat(4));
    assert_eq!(roles, expected);
    let weights: Vec<u8> = v.messages.iter().map(|m| m.weight).collect();
    let targets: Vec<usize> = weights.iter().enumerate().filter(|(_, w)| **w == 1).map(|(i, _)| i).collect();
    // the copied questions turn (index 10) is context, not a target
    assert_eq!(targets, [1, 3, 5, 11, 13, 15, 17]);
    assert_eq!(v.targets, 7);
    // Terminal output without source_call_id stays unlinked: never paired by position.
    assert!(v.messages.iter().filter(|m| m.role == MsgRole::Tool).all(|m| m.tool_call_id.is_none()));
}

#[test]
fn gym_generation_token_ids_ride_on_assistant_messages() {
    // Each of the 5 rollouts has one output message with prompt_token_ids (109),
    // generation_token_ids and generation_log_probs (785, 959, 1038, 964, 1277 tokens).
    let recs = support::records(&["gym/competitive_coding_challenges__example_rollouts.jsonl"]);
    let mut seen = Vec::new();
    for t in &recs {
        for m in full_view(t).messages.iter().filter(|m| m.role == MsgRole::Assistant) {
            if let Some(tok) = &m.tokens {
                let n = tok.completion_token_ids.as_ref().map(Vec::len).unwrap_or(0);
                assert_eq!(tok.logprobs.as_ref().map(Vec::len), Some(n), "one log prob per generated token");
                assert_eq!(tok.prompt_token_ids.as_ref().map(Vec::len), Some(109));
                assert_eq!(tok.completion_token_ids.as_ref().map(|v| v[0]), Some(151667));
                seen.push(n);
            }
        }
    }
    assert_eq!(seen, [785, 959, 1038, 964, 1277]);
}
