//! Every real fixture tree inspected in one call: each file gets the right family.
//! (The two files in `atif/not-atif/` that no reader claims are a native Gemini CLI
//! session and a pre-ATIF oracle list: formats trajkit does not read.)

mod common;

use common::{read, real};

/// Path below `tests/fixtures/real/` and the family detected (`None`: not recognised).
const FORMATS: &[(&str, Option<&str>)] = &[
    ("adp/swe-gym_sample_sft_openhands.json", Some("adp")),
    ("adp/swe-gym_sample_std.json", Some("adp")),
    ("atif/claude-code-fail-agent-tool-v1.7.trajectory.json", Some("atif")),
    ("atif/claude-code-pass-v1.7.trajectory.json", Some("atif")),
    ("atif/harbor-exports/terminus2-invalid-llm-json.traces.json", Some("harbor-traces")),
    ("atif/not-atif/oracle-pre-atif-set-e.json", None),
    ("atif/not-atif/rfc-native-gemini-cli-trajectory.json", Some("gemini-cli")),
    ("atif/not-atif/rfc-native-mini-swe-agent-trajectory.json", Some("mini-swe-agent")),
    ("atif/not-atif/rfc-native-openhands-trajectory.json", Some("openhands")),
    ("atif/openhands-hello-world-v1.5.trajectory.json", Some("atif")),
    ("atif/oracle-simple-v1.2.trajectory.json", Some("atif")),
    ("atif/terminus2-context-summarization-v1.2/trajectory.json", Some("atif")),
    ("atif/terminus2-context-summarization-v1.2/trajectory.summarization-1-answers.json", Some("atif")),
    ("atif/terminus2-context-summarization-v1.2/trajectory.summarization-1-questions.json", Some("atif")),
    ("atif/terminus2-context-summarization-v1.2/trajectory.summarization-1-summary.json", Some("atif")),
    ("atif/terminus2-context-summarization-v1.4.trajectory.json", Some("atif")),
    ("atif/terminus2-context-summarization-v1.7/trajectory.json", Some("atif")),
    ("atif/terminus2-context-summarization-v1.7/trajectory.summarization-1-answers.json", Some("atif")),
    ("atif/terminus2-context-summarization-v1.7/trajectory.summarization-1-questions.json", Some("atif")),
    ("atif/terminus2-context-summarization-v1.7/trajectory.summarization-1-summary.json", Some("atif")),
    ("atif/terminus2-hello-world-v1.3.trajectory.json", Some("atif")),
    ("atif/terminus2-invalid-llm-json-v1.7.trajectory.json", Some("atif")),
    ("atif/terminus2-linear-history-v1.7/trajectory.cont-1.json", Some("atif")),
    ("atif/terminus2-linear-history-v1.7/trajectory.json", Some("atif")),
    ("atif/terminus2-timeout-v1.6.trajectory.json", Some("atif")),
    ("bfcl/BFCL_v4_live_parallel.json", Some("bfcl")),
    ("bfcl/BFCL_v4_multi_turn_base.json", Some("bfcl")),
    ("bfcl/possible_answer.BFCL_v4_live_parallel.json", Some("bfcl")),
    ("bfcl/possible_answer.BFCL_v4_multi_turn_base.json", Some("bfcl")),
    ("chat/llamafactory_glaive_toolcall_en_demo.json", Some("sharegpt")),
    ("claude_code/codemie/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl", Some("claude-code")),
    ("claude_code/codemie/-tmp-private/agent-36541525.jsonl", Some("claude-code")),
    ("claude_code/codemie/-tmp-private/agent-50243ee8.jsonl", Some("claude-code")),
    ("claude_code/codemie/incremental-subagents/turn-2/subagents/agent-a485154.jsonl", Some("claude-code")),
    ("claude_code/codemie/incremental-subagents/turn-2.jsonl", Some("claude-code")),
    ("claude_code/codemie/session-624a4a58.jsonl", Some("claude-code")),
    ("claude_code/codemie/session-9eda1058.jsonl", Some("claude-code")),
    ("claude_code/spotter/short.jsonl", Some("claude-code")),
    ("claude_code/spotter/subagent.jsonl", Some("claude-code")),
    ("claude_code/spotter/tool_heavy.jsonl", Some("claude-code")),
    ("codex/codemie/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl", Some("codex")),
    ("codex/codemie/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl", Some("codex")),
    ("copilot/chat-session-0885a5a2.jsonl", Some("copilot-chat")),
    ("copilot/copilot-cli-events.jsonl", Some("copilot-cli")),
    ("gym/anyswe_agent__example_rollouts_hermes.jsonl", Some("gym")),
    ("gym/aviary__example_rollouts.jsonl", Some("gym")),
    ("gym/aviary_bixbench__example_rollouts.jsonl", Some("gym")),
    ("gym/aviary_gsm8k__example_rollouts.jsonl", Some("gym")),
    ("gym/aviary_hotpotqa__example_rollouts.jsonl", Some("gym")),
    ("gym/bbq__example_rollouts.jsonl", Some("gym")),
    ("gym/blackjack__example_rollouts.jsonl", Some("gym")),
    ("gym/circle_click__example_rollouts.jsonl", Some("gym")),
    ("gym/competitive_coding_challenges__example_rollouts.jsonl", Some("gym")),
    ("gym/conversational_tool_use_simulation__example_rollouts.jsonl", Some("gym")),
    ("gym/ether0__example_rollouts.jsonl", Some("gym")),
    ("gym/ether0__example_rollouts_materialized_inputs.jsonl", Some("gym")),
    ("gym/ether0__example_rollouts_reward_profiling.jsonl", Some("gym")),
    ("gym/example_multi_turn_gymnasium__example_rollouts.jsonl", Some("gym")),
    ("gym/example_session_state_mgmt__example_rollouts.jsonl", Some("gym")),
    ("gym/example_single_tool_call__example_rollouts.jsonl", Some("gym")),
    ("gym/example_tool_call_multireward__example_rollouts.jsonl", Some("gym")),
    ("gym/gdpval__example_rollouts.jsonl", Some("gym")),
    ("gym/graphwalks__example_rollouts.jsonl", Some("gym")),
    ("gym/grl_sokoban__example_rollouts.jsonl", Some("gym")),
    ("gym/gymnasium__example_rollouts.jsonl", Some("gym")),
    ("gym/hermes_agent__example_math_rollouts.jsonl", Some("gym")),
    ("gym/mini_swe_agent_2__example_rollouts.jsonl", Some("gym")),
    ("gym/mrcr__example_rollouts.jsonl", Some("gym")),
    ("gym/multichallenge__example_rollouts.jsonl", Some("gym")),
    ("gym/openair_congestion__example_rollouts.jsonl", Some("gym")),
    ("gym/ruler__example_rollouts.jsonl", Some("gym")),
    ("gym/tau2__example_rollouts.jsonl", Some("gym")),
    ("gym/tavily_search__example_rollouts.jsonl", Some("gym")),
    ("gym/toolsandbox__example_rollouts.jsonl", Some("gym")),
    ("inspect/scorer_logs__2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr.eval", Some("inspect")),
    ("inspect/scorer_logs__2025-02-11T15-18-04-05-00_popularity_mj7khqpMM4GBCfVQozKgzB.eval", Some("inspect")),
    ("inspect/test_eval_log__log_formats.json", Some("inspect")),
    ("inspect/test_eval_log__log_images.json", Some("inspect")),
    ("inspect/test_eval_log__log_message_deduplication.eval", Some("inspect")),
    ("inspect/test_eval_log__log_read_sample.eval", Some("inspect")),
    ("inspect/test_eval_log__log_read_sample.json", Some("inspect")),
    ("inspect/test_eval_log__log_streaming.eval", Some("inspect")),
    ("inspect/test_eval_log__log_tool_call_error.json", Some("inspect")),
    ("inspect/test_eval_set__2024-08-29T15-11-18+00-00_popularity_5EAmX6wjMFqea6WY7XHzZp.json", Some("inspect")),
    ("inspect/test_logs__2025-05-12T20-27-36-04-00_browser.json", Some("inspect")),
    ("inspect/test_logs__2025-05-12T20-28-13-04-00_no-samples.json", Some("inspect")),
    ("inspect/test_logs__2025-05-12T20-28-13-04-00_popularity.json", Some("inspect")),
    ("inspect/test_logs__2025-05-12T20-28-26-04-00_security-guide.json", Some("inspect")),
    ("inspect/test_logs_choices__mmlu-summary-choices.eval", Some("inspect")),
    ("langfuse/claude-agent-2025-12-22.trace.json", Some("langfuse")),
    ("langfuse/google-adk-2025-08-28.trace.json", Some("langfuse")),
    ("langfuse/koog-2025-08-26.trace.json", Some("langfuse")),
    ("langfuse/langgraph-python-2025-08-22.trace.json", Some("langfuse")),
    ("langfuse/microsoft-agent-2025-12-17.trace.json", Some("langfuse")),
    ("langfuse/openai-agents-2025-09-30.trace.json", Some("langfuse")),
    ("langfuse/pydantic-ai-tools-2025-12-04.trace.json", Some("langfuse")),
    ("langfuse/vercel-aisdk-2025-11-17.trace.json", Some("langfuse")),
    ("langsmith/langsmith_js_wrap_openai_default.json", Some("langsmith")),
    ("langsmith/langsmith_py_wrap_openai_reasoning.json", Some("langsmith")),
    ("langsmith/support_agent_with_policy_subagent.run_tree.json", Some("langsmith")),
    ("mini_swe_agent/github_issue.traj.json", Some("mini-swe-agent")),
    ("mini_swe_agent/results.json", Some("mini-swe-agent")),
    ("mlflow/calculator_chain.v2.trace.json", Some("mlflow")),
    ("mlflow/travel_agent_with_research_subagent.v3.trace.json", Some("mlflow")),
    ("nebius_swe_agent/adp_nebius_sample_raw.json", Some("nebius")),
    ("opencode/export/ses_628d8425dffe9s3gzVjQ6L1iC2.json", Some("opencode")),
    ("opencode/storage/message/ses_341f3e676ffez6WUF6zpok7dUZ/msg_cbe0c198d001tjWgSs6RvYE4UB.json", Some("opencode")),
    ("opencode/storage/message/ses_341f3e676ffez6WUF6zpok7dUZ/msg_cbe0c1997001P5zc2OARzlOzVt.json", Some("opencode")),
    ("opencode/storage/message/ses_341f3e676ffez6WUF6zpok7dUZ/msg_cbe0c240100106jsQ1rDlkwzAe.json", Some("opencode")),
    ("opencode/storage/message/ses_341f3e676ffez6WUF6zpok7dUZ/msg_cbe0c3809001cQpmBpOStLZADB.json", Some("opencode")),
    ("opencode/storage/message/ses_341f3e676ffez6WUF6zpok7dUZ/msg_cbe0c4a77001GYDUcV9lPHki8x.json", Some("opencode")),
    ("opencode/storage/message/ses_341f3e676ffez6WUF6zpok7dUZ/msg_cbe0c5ff90012UL4yVT6E57bkV.json", Some("opencode")),
    ("opencode/storage/message/ses_341f3e676ffez6WUF6zpok7dUZ/msg_cbe0c6e32001Zv36GAr1n5wIoG.json", Some("opencode")),
    ("opencode/storage/message/ses_341f3e676ffez6WUF6zpok7dUZ/msg_cbe0c84a6001U88aaIEIrh8H5f.json", Some("opencode")),
    ("opencode/storage/message/ses_341f3e676ffez6WUF6zpok7dUZ/msg_cbe0c93d0001vTXRDxsrl1rWbm.json", Some("opencode")),
    ("opencode/storage/message/ses_341f3e676ffez6WUF6zpok7dUZ/msg_cbe0ca8b2001T3nI28xt1DQVqw.json", Some("opencode")),
    ("opencode/storage/message/ses_341f3e676ffez6WUF6zpok7dUZ/msg_cbe0cb56600130oeFsmMZthR4w.json", Some("opencode")),
    ("opencode/storage/message/ses_341f480cfffekQwFX2LabeJFAU/msg_cbe0c07af001FqFiaeygb5fC3O.json", Some("opencode")),
    ("opencode/storage/message/ses_341f480cfffekQwFX2LabeJFAU/msg_cbe0c07c80010ERhOWZYJtLMGJ.json", Some("opencode")),
    ("opencode/storage/message/ses_341f480cfffekQwFX2LabeJFAU/msg_cbe0d01950013Y9CVnC8K3Yyef.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c07af001FqFiaeygb5fC3O/prt_cbe0c07b0001bC14fBPiG51Pxx.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c07c80010ERhOWZYJtLMGJ/prt_cbe0c10da001arUcYyJFJwf6VQ.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c07c80010ERhOWZYJtLMGJ/prt_cbe0c10dd0010oneadStmSVlwR.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c07c80010ERhOWZYJtLMGJ/prt_cbe0d014d001wAh2cGXgr7q7r4.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c198d001tjWgSs6RvYE4UB/prt_cbe0c199000123FqnW453VO4hz.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c1997001P5zc2OARzlOzVt/prt_cbe0c1ee3001iiYizlV7MVq6xo.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c1997001P5zc2OARzlOzVt/prt_cbe0c1ee5001FiSBiraRzLKD2C.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c1997001P5zc2OARzlOzVt/prt_cbe0c2151001V6jAmjv2umjPVE.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c1997001P5zc2OARzlOzVt/prt_cbe0c223d001NjG6cZV8pRSyK8.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c1997001P5zc2OARzlOzVt/prt_cbe0c23cc001TBm8o6Sir5FUqa.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c240100106jsQ1rDlkwzAe/prt_cbe0c2d48001ehghyPB0Z0O396.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c240100106jsQ1rDlkwzAe/prt_cbe0c2d4a001lURIlnlmQxSY5F.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c240100106jsQ1rDlkwzAe/prt_cbe0c306e001iON4aeoVDQaxu3.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c240100106jsQ1rDlkwzAe/prt_cbe0c37d8001yEPiMXwA5fUy06.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c3809001cQpmBpOStLZADB/prt_cbe0c40db001WnXa3xhjcmjL3Y.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c3809001cQpmBpOStLZADB/prt_cbe0c40dd001CJ4ENjXqy36TFM.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c3809001cQpmBpOStLZADB/prt_cbe0c43360011hgsZlDEAQErXy.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c3809001cQpmBpOStLZADB/prt_cbe0c45b3001Wuee7YgwmWoAOJ.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c3809001cQpmBpOStLZADB/prt_cbe0c489f001kU4aJgvRxIKhIT.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c3809001cQpmBpOStLZADB/prt_cbe0c4a46001NQKnrkJjjDCzSQ.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c4a77001GYDUcV9lPHki8x/prt_cbe0c54bb001bkuwtYHBfKO3jC.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c4a77001GYDUcV9lPHki8x/prt_cbe0c54bd001a013fUnmIpZ2Nr.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c4a77001GYDUcV9lPHki8x/prt_cbe0c590d00122lROjo3Mu9Off.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c4a77001GYDUcV9lPHki8x/prt_cbe0c5c30001opGNTrId8VHxVB.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c4a77001GYDUcV9lPHki8x/prt_cbe0c5fd0001ET0Rx9A23bXUOe.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c5ff90012UL4yVT6E57bkV/prt_cbe0c699b001YNcMGGriwIRRUf.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c5ff90012UL4yVT6E57bkV/prt_cbe0c699d001rNga712Q4xkeM6.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c5ff90012UL4yVT6E57bkV/prt_cbe0c6c46001z0AaJNvTkiSuTZ.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c5ff90012UL4yVT6E57bkV/prt_cbe0c6e08001UW4ZtYqz0u6VMe.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c6e32001Zv36GAr1n5wIoG/prt_cbe0c7eab00181EmDQlPynePhG.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c6e32001Zv36GAr1n5wIoG/prt_cbe0c7ead001lBevriuKv2xScP.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c6e32001Zv36GAr1n5wIoG/prt_cbe0c8083001fEC46O8nODbQDi.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c6e32001Zv36GAr1n5wIoG/prt_cbe0c8478001xTkyXZ4BQpOalH.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c84a6001U88aaIEIrh8H5f/prt_cbe0c8ea3001gWlUZZ5FTts3du.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c84a6001U88aaIEIrh8H5f/prt_cbe0c8ea5001TC56gLQ4JY1pR2.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c84a6001U88aaIEIrh8H5f/prt_cbe0c9121001HJIOWm6KQ7Ibwf.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c84a6001U88aaIEIrh8H5f/prt_cbe0c939f001jbQlDoEwDP8VB4.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c93d0001vTXRDxsrl1rWbm/prt_cbe0c9e0a001qmgE81OnkdFvi7.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c93d0001vTXRDxsrl1rWbm/prt_cbe0c9e0c001AS8GfSSa9L5sXX.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c93d0001vTXRDxsrl1rWbm/prt_cbe0ca1160010W4FVT2mp6RZ5m.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c93d0001vTXRDxsrl1rWbm/prt_cbe0ca79f001tpy6BOYdZeV7lX.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0c93d0001vTXRDxsrl1rWbm/prt_cbe0ca888001MW1BMrfH2PSaCZ.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0ca8b2001T3nI28xt1DQVqw/prt_cbe0cb35d001EPIHpDYAL0erJb.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0ca8b2001T3nI28xt1DQVqw/prt_cbe0cb360001D3DVTtyZ7aOKqD.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0ca8b2001T3nI28xt1DQVqw/prt_cbe0cb533001x25gQUfVz42aHs.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0cb56600130oeFsmMZthR4w/prt_cbe0cc45e001duDVKBA3kCG7Ie.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0cb56600130oeFsmMZthR4w/prt_cbe0cc460001jK0yESrkwdylCv.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0cb56600130oeFsmMZthR4w/prt_cbe0d0118001xrKpGkb81sbW5V.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0d01950013Y9CVnC8K3Yyef/prt_cbe0d081f0010Kw4xPeVTzBT1e.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0d01950013Y9CVnC8K3Yyef/prt_cbe0d08210014kS20eziGUPKo8.json", Some("opencode")),
    ("opencode/storage/part/msg_cbe0d01950013Y9CVnC8K3Yyef/prt_cbe0d12a8001qUAXBdbpFju3fj.json", Some("opencode")),
    (
        "opencode/storage/session/29d43526f88157cd4edd071b899dd01f240b771b/ses_341f3e676ffez6WUF6zpok7dUZ.json",
        Some("opencode"),
    ),
    (
        "opencode/storage/session/29d43526f88157cd4edd071b899dd01f240b771b/ses_341f480cfffekQwFX2LabeJFAU.json",
        Some("opencode"),
    ),
    ("openhands_eval_output/output.jsonl", Some("openhands")),
    ("openhands_events/basic.json", Some("openhands")),
    ("openhands_events/basic_interactions.json", Some("openhands")),
    ("otel/openai_agents_0.24.0_oi_2.5.3.jsonl", Some("otel")),
    ("otel/openai_agents_0.24.0_oi_2.5.3_as_tool.json", Some("otel")),
    ("otel/pydantic_ai_2.58.0.json", Some("otel")),
    ("otel/pydantic_ai_2.58.0_delegation.json", Some("otel")),
    ("otel/spec/openllmetry_prompt_attributes.jsonl", Some("otel")),
    ("otel/spec/tempo_batches_event_capture.json", Some("otel")),
    ("swe_agent_traj/all_preds.jsonl", Some("swe-agent")),
    ("swe_agent_traj/function_calling_simple.traj", Some("swe-agent")),
    ("swe_agent_traj/pydicom__pydicom-1458.traj", Some("swe-agent")),
    ("swe_gym_openhands/adp_swe-gym_sample_raw.json", Some("swe-gym")),
    ("swe_smith/adp_swe-smith_sample_raw.json", Some("swe-smith")),
    ("swe_smith/ft_xml_example.jsonl", Some("swe-smith")),
    ("swe_smith/pandas-dev__pandas.95280573.pr_53856.report.json", Some("swe-agent")),
    ("swe_smith/pandas-dev__pandas.95280573.pr_53856.traj", Some("swe-agent")),
    ("swe_smith/run_evaluation.report.json", Some("swe-agent")),
    ("tau2/2025-08-10T02:44:06.496849_telecom_llm_agent_gpt-4o_user_simulator_gpt-4o.json", Some("tau2")),
    ("tau_bench_v1/tb_airline.json", Some("tau-bench")),
    ("terminal_bench_harbor/example_output.jsonl", Some("gym")),
    ("toolbench/10_ChatGPT_DFS_woFilter_w2.json", Some("toolbench")),
    ("toolbench/G1_query.json", Some("toolbench")),
];

#[test]
fn a_mixed_tree_of_every_family_is_detected_file_by_file() {
    let root = real("");
    let c = read(std::slice::from_ref(&root));
    let prefix = format!("{}/", root.display().to_string().trim_end_matches('/'));
    let got: Vec<(String, Option<String>)> = c
        .reports
        .iter()
        .map(|r| {
            let rel = r.path.strip_prefix(&prefix).unwrap_or(&r.path).to_string();
            (rel, r.format.clone())
        })
        .collect();
    let want: Vec<(String, Option<String>)> =
        FORMATS.iter().map(|(p, f)| (p.to_string(), f.map(str::to_string))).collect();
    assert_eq!(got, want);
    // Files that no reader claims say so; every other file was read without a file error.
    for r in &c.reports {
        match &r.format {
            None => assert!(r.error.as_deref().is_some_and(|e| e.contains("not a recognised")), "{}", r.path),
            Some(_) => assert!(r.error.is_none(), "{}: {:?}", r.path, r.error),
        }
    }
}

/// The `truncated_observation` rule measured on every real fixture (docs/record.md): one
/// observation is cut by its collector — ToolBench's DFS run, whose collector stops an
/// observation at a fixed length (1,024 characters of a JSON payload, then "...") — while 15
/// carry the harness's announced clip (`<response clipped><NOTE>`), which is what the model
/// saw and is not a gap.
#[test]
fn truncated_observations_on_every_real_fixture() {
    let c = read(&[real("")]);
    let flagged: Vec<(String, Option<usize>, Option<String>)> = c
        .trajectories
        .iter()
        .flat_map(|t| t.gaps.iter().filter(|g| g.kind.as_str() == "truncated_observation").map(move |g| (t, g)))
        .map(|(t, g)| (t.provenance.path.rsplit('/').next().unwrap_or("").to_string(), g.step, g.detail.clone()))
        .collect();
    let want =
        [("10_ChatGPT_DFS_woFilter_w2.json".to_string(), Some(3), Some("JSON payload cut mid-value".to_string()))];
    assert_eq!(flagged, want);
    let counted: u64 = c.reports.iter().filter_map(|r| r.gaps.get("truncated_observation")).sum();
    assert_eq!(counted, 1, "counted in the file reports (coverage)");
    let announced: usize = c
        .trajectories
        .iter()
        .flat_map(|t| &t.steps)
        .flat_map(|s| {
            let own = (s.role == trajkit_model::Role::Tool).then_some(s.content.as_ref()).flatten();
            s.tool_results.iter().filter_map(|r| r.content.as_ref()).chain(own)
        })
        .filter(|v| v.to_string().contains("<response clipped><NOTE>"))
        .count();
    assert_eq!(announced, 15);
}
