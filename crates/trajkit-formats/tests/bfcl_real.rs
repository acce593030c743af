//! BFCL reader on the real published task files (tests/fixtures/real/bfcl).

mod common;

use common::{counts, read, real, report};

/// file, records, rejected as final_call_only, part_of (figures checked with python:
/// 16 and 200 task rows, every possible_answer id matching its task file's ids).
const FIGURES: &[(&str, u64, u64, Option<&str>)] = &[
    ("BFCL_v4_live_parallel.json", 16, 16, None),
    ("BFCL_v4_multi_turn_base.json", 200, 200, None),
    ("possible_answer.BFCL_v4_live_parallel.json", 0, 0, Some("BFCL_v4_live_parallel.json")),
    ("possible_answer.BFCL_v4_multi_turn_base.json", 0, 0, Some("BFCL_v4_multi_turn_base.json")),
];

#[test]
fn every_real_bfcl_file_has_its_exact_figures() {
    let c = read(&[real("bfcl")]);
    assert_eq!(c.reports.len(), FIGURES.len(), "one report per fixture file");
    for &(name, records, rejected, part_of) in FIGURES {
        let r = report(&c, name);
        assert_eq!(r.format.as_deref(), Some("bfcl"), "{name}");
        let got = (r.records, r.trajectories, r.steps, r.tool_calls, r.duplicate_records, r.rejected);
        assert_eq!(got, (records, 0, 0, 0, 0, rejected), "{name}");
        let reasons: &[(&str, u64)] = if rejected > 0 { &[("final_call_only", rejected)] } else { &[] };
        assert_eq!(r.reasons, counts(reasons), "{name}");
        assert!(r.gaps.is_empty() && r.error.is_none(), "{name}");
        assert_eq!(r.part_of.as_deref().map(|p| p.rsplit('/').next().unwrap_or(p)), part_of, "{name}");
    }
    assert!(c.trajectories.is_empty());
    let lines: Vec<Option<u64>> =
        c.rejections.iter().filter(|r| r.path.ends_with("live_parallel.json")).map(|r| r.line).take(2).collect();
    assert_eq!(lines, [Some(1), Some(2)]);
}

#[test]
fn the_producer_layout_possible_answer_dir_is_claimed() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("possible_answer")).expect("mkdir");
    let name = "BFCL_v4_live_parallel.json";
    std::fs::copy(real(&format!("bfcl/{name}")), dir.path().join(name)).expect("copy");
    std::fs::copy(real(&format!("bfcl/possible_answer.{name}")), dir.path().join("possible_answer").join(name))
        .expect("copy");
    let c = read(&[dir.path().to_path_buf()]);
    let side = c.reports.iter().find(|r| r.path.contains("possible_answer/")).expect("side file report");
    assert!(side.part_of.as_deref().is_some_and(|p| p.ends_with(name) && !p.contains("possible_answer")));
    assert_eq!((side.records, side.format.as_deref()), (0, Some("bfcl")));
}

mod synthetic {
    //! Result and score files: no real one is in the fixtures. These rows are written by
    //! hand in the exact shapes bfcl_eval writes (`_llm_response_generation.py`
    //! `result_to_write`, `base_handler.inference_multi_turn_FC` metadata,
    //! `eval_runner_helper.save_eval_results`). SYNTHETIC.
    use super::common::read;
    use serde_json::json;
    use trajkit_model::{Role, TaskKeySource};

    fn files(files: &[(&str, Vec<serde_json::Value>)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        for (rel, rows) in files {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
            std::fs::write(&path, text).expect("write");
        }
        dir
    }

    fn state() -> serde_json::Value {
        json!([{"role": "state_info", "class_name": "GorillaFileSystem", "content": {"root": {}}}])
    }

    fn fc_row() -> serde_json::Value {
        json!({
            "id": "multi_turn_base_0",
            "result": [[[{"cd": "{\"folder\": \"document\"}"}], "Done."]],
            "input_token_count": [[100, 120]],
            "output_token_count": [[10, 5]],
            "latency": [[0.5, 0.4]],
            "inference_log": [
                state(),
                {
                    "begin_of_turn_query": [{"role": "user", "content": "Go to document."}],
                    "step_0": [
                        {"role": "assistant", "content": [{"cd": "{\"folder\": \"document\"}"}]},
                        {"role": "handler_log", "content": "Successfully decoded model response.", "model_response_decoded": ["cd(folder='document')"]},
                        {"role": "tool", "content": "{\"current_working_directory\": \"document\"}"}
                    ],
                    "step_1": [
                        {"role": "assistant", "content": "Done."},
                        {"role": "handler_log", "content": "Error decoding the model response. Proceed to next turn.", "error": "x"}
                    ]
                },
                state()
            ]
        })
    }

    fn prompting_row() -> serde_json::Value {
        json!({
            "id": "multi_turn_base_1",
            "result": [["[ls(a=True), sort('f.txt')]"]],
            "input_token_count": [[50]], "output_token_count": [[7]], "latency": [[1.0]],
            "inference_log": [{
                "begin_of_turn_query": [{"role": "user", "content": "List and sort."}],
                "step_0": [
                    {"role": "assistant", "content": "[ls(a=True), sort('f.txt')]"},
                    {"role": "handler_log", "content": "Successfully decoded model response.", "model_response_decoded": ["ls(a=True)", "sort('f.txt')"]},
                    {"role": "tool", "content": "{\"current_directory_content\": [\"f.txt\"]}"},
                    {"role": "tool", "content": "{\"sorted_content\": \"\"}"}
                ]
            }]
        })
    }

    #[test]
    fn multi_turn_results_with_executed_calls_are_trajectories() {
        let single = json!({"id": "live_parallel_0-0-0", "result": [{"get_current_weather": "{\"location\": \"Beijing, China\"}"}], "input_token_count": 10, "output_token_count": 3, "latency": 0.2});
        let error = json!({"id": "multi_turn_base_2", "result": "Error during inference: timeout", "traceback": "..."});
        let no_exec = json!({"id": "multi_turn_base_3", "result": [[[]]], "inference_log": [{"begin_of_turn_query": [], "step_0": [{"role": "assistant", "content": []}]}]});
        let dir = files(&[
            (
                "result/gpt-4o-FC/multi_turn/BFCL_v4_multi_turn_base_result.json",
                vec![fc_row(), prompting_row(), error, no_exec],
            ),
            ("result/gpt-4o-FC/live/BFCL_v4_live_parallel_result.json", vec![single]),
        ]);
        let c = read(&[dir.path().to_path_buf()]);
        let r = c.reports.iter().find(|r| r.path.ends_with("multi_turn_base_result.json")).expect("report");
        assert_eq!(r.format.as_deref(), Some("bfcl"));
        assert_eq!((r.records, r.trajectories, r.steps, r.tool_calls, r.rejected), (4, 2, 6 + 4, 1 + 2, 2));
        assert_eq!(r.reasons.get("final_call_only"), Some(&2));
        assert_eq!(r.gaps.get("invalid_tool_arguments"), Some(&1), "sort('f.txt') is positional: kept verbatim");
        let single = c.reports.iter().find(|r| r.path.ends_with("live_parallel_result.json")).expect("report");
        assert_eq!((single.records, single.rejected, single.reasons.get("final_call_only")), (1, 1, Some(&1)));

        let t = &c.trajectories[0];
        use Role::*;
        let roles: Vec<Role> = t.steps.iter().map(|s| s.role).collect();
        assert_eq!(roles, [Environment, User, Assistant, Tool, Assistant, Environment]);
        let call = &t.steps[2].tool_calls[0];
        assert_eq!(
            (call.name.as_str(), call.arguments.value(), call.text_embedded),
            ("cd", &json!({"folder": "document"}), false)
        );
        assert_eq!(t.steps[3].tool_results[0].call_id, call.id);
        let m = t.steps[2].metrics.as_ref().expect("step metrics");
        // The per-turn latency (seconds) is the step's duration.
        assert_eq!(
            (m.prompt_tokens, m.completion_tokens, m.duration_seconds, m.extra.get("latency")),
            (Some(100), Some(10), Some(0.5), None)
        );
        assert_eq!(t.steps[4].metrics.as_ref().and_then(|m| m.prompt_tokens), Some(120));
        assert_eq!((t.task.key.as_str(), t.task.key_source), ("bfcl/multi_turn_base_0", TaskKeySource::Explicit));
        assert_eq!(t.agent.model.as_deref(), Some("gpt-4o-FC"));
        assert!(t.gaps.is_empty());
        assert!(t.extra.contains_key("result"), "the scored output stays in extra");

        let t = &c.trajectories[1];
        let calls: Vec<(&str, bool)> =
            t.steps[1].tool_calls.iter().map(|c| (c.name.as_str(), c.text_embedded)).collect();
        assert_eq!(calls, [("ls", true), ("sort", true)]);
        assert_eq!(t.steps[1].tool_calls[0].arguments, json!({"a": true}));
        assert_eq!(t.steps[3].tool_results[0].call_id.as_deref(), Some("t0.s0.c1"));
    }

    /// A prompting row with one decoded call `call` and one executed result.
    fn decoded_row(id: &str, call: &str) -> serde_json::Value {
        json!({
            "id": id,
            "result": [[call]],
            "inference_log": [{
                "begin_of_turn_query": [{"role": "user", "content": "Do it."}],
                "step_0": [
                    {"role": "assistant", "content": call},
                    {"role": "handler_log", "content": "Successfully decoded model response.", "model_response_decoded": [call]},
                    {"role": "tool", "content": "ok"}
                ]
            }]
        })
    }

    #[test]
    fn deeply_nested_literals_are_kept_verbatim_without_aborting() {
        // 5000 nested lists used to overflow the parser's stack (process abort).
        let deep = format!("f(a={}{})", "[".repeat(5000), "]".repeat(5000));
        let ok = format!("f(a={}1{})", "[".repeat(3), "]".repeat(3));
        let rows = vec![decoded_row("multi_turn_base_7", &deep), decoded_row("multi_turn_base_8", &ok)];
        let dir = files(&[("BFCL_v4_multi_turn_base_result.json", rows)]);
        let c = read(&[dir.path().to_path_buf()]);
        assert_eq!((c.reports[0].trajectories, c.reports[0].rejected), (2, 0));
        let call = &c.trajectories[0].steps[1].tool_calls[0];
        assert_eq!((call.name.as_str(), call.arguments_invalid), ("f", true));
        assert_eq!(call.arguments, json!(deep), "the text is kept verbatim");
        assert_eq!(c.reports[0].gaps.get("invalid_tool_arguments"), Some(&1));
        let call = &c.trajectories[1].steps[1].tool_calls[0];
        assert_eq!((call.arguments.value(), call.arguments_invalid), (&json!({"a": [[[1]]]}), false));
    }

    #[test]
    fn python_string_escapes_are_decoded_or_the_call_kept_verbatim() {
        let rows = vec![
            decoded_row("multi_turn_base_9", r"f(s='caf\u00e9 \x41\n')"),
            decoded_row("multi_turn_base_10", r"f(s='\N{BULLET}')"),
        ];
        let dir = files(&[("BFCL_v4_multi_turn_base_result.json", rows)]);
        let c = read(&[dir.path().to_path_buf()]);
        let call = &c.trajectories[0].steps[1].tool_calls[0];
        assert_eq!((call.arguments.value(), call.arguments_invalid), (&json!({"s": "café A\n"}), false));
        let call = &c.trajectories[1].steps[1].tool_calls[0];
        assert_eq!((call.arguments.value(), call.arguments_invalid), (&json!(r"f(s='\N{BULLET}')"), true));
    }

    #[test]
    fn token_lists_stay_in_extra_unless_every_figure_was_placed() {
        // step_1 has no assistant entry (its figures have no step) and 7.5 is no count.
        let row = json!({"id": "multi_turn_base_0", "result": [],
            "input_token_count": [[10, 11, 12]], "output_token_count": [[5, 6, 7.5]], "latency": [[1.0, 2.0, 3.0]],
            "inference_log": [{"begin_of_turn_query": [{"role": "user", "content": "hi"}],
                "step_0": [{"role": "assistant", "content": [{"f": "{\"a\":1}"}]}, {"role": "tool", "content": "r"}],
                "step_1": [{"role": "handler_log", "content": "x"}],
                "step_2": [{"role": "assistant", "content": "done"}]}]});
        let dir = files(&[("BFCL_v4_multi_turn_base_result.json", vec![row, fc_row()])]);
        let c = read(&[dir.path().to_path_buf()]);
        let t = &c.trajectories[0];
        assert_eq!(t.extra["input_token_count"], json!([[10, 11, 12]]));
        assert_eq!(t.extra["output_token_count"], json!([[5, 6, 7.5]]));
        assert_eq!(t.extra["latency"], json!([[1.0, 2.0, 3.0]]));
        let last = t.steps.iter().rev().find(|s| s.role == Role::Assistant).and_then(|s| s.metrics.as_ref());
        assert_eq!(last.map(|m| (m.prompt_tokens, m.completion_tokens)), Some((Some(12), None)));
        assert!(!t.extra.contains_key("test_category"), "derived values are not source fields");
        // Every figure of the FC row is on a step: the lists are not repeated.
        let t = &c.trajectories[1];
        assert!(["input_token_count", "output_token_count", "latency"].iter().all(|k| !t.extra.contains_key(k)));
        assert_eq!(t.task.id.as_deref(), Some("multi_turn_base_0"));
    }

    #[test]
    fn score_files_are_evaluation_reports() {
        let header = json!({"accuracy": 0.5, "correct_count": 1, "total_count": 2});
        let failed = json!({"id": "multi_turn_base_0", "model_name": "gpt-4o-FC", "test_category": "multi_turn_base", "valid": false, "error": {"error_message": ["x"]}, "error_type": "multi_turn:instance_state_mismatch", "prompt": {}, "model_result_raw": [], "model_result_decoded": [], "possible_answer": []});
        let dir = files(&[("score/gpt-4o-FC/multi_turn/BFCL_v4_multi_turn_base_score.json", vec![header, failed])]);
        let c = read(&[dir.path().to_path_buf()]);
        let r = &c.reports[0];
        assert_eq!((r.format.as_deref(), r.records, r.rejected), (Some("bfcl"), 2, 2));
        assert_eq!(r.reasons.get("evaluation_report"), Some(&2));
    }
}
