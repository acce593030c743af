//! The output contract as trainers see it: Python `datasets` and `pyarrow` load the exported
//! JSONL, Parquet and shard folders as they are, with the row counts and values trajkit wrote.
//! `.ci/run` installs both and sets TRAJKIT_REQUIRE_PYTHON=1, so CI fails rather than skips.

mod support;

use std::path::Path;
use std::process::Command;

use support::{one, Spec};
use trajkit_export::{export, ExportOptions, Filter, Format, Purpose, Selection, Split, View};
use trajkit_library::Library;

const SCRIPT: &str = r##"
import json, sys
import datasets, pyarrow.parquet as pq
datasets.disable_progress_bars()
d = sys.argv[1]
exp = json.loads(sys.argv[2])
full = datasets.load_dataset("json", data_files=f"{d}/full.jsonl.gz", split="train")
assert full.num_rows == exp["full"], (full.num_rows, exp)
row = full[0]
assert [m["role"] for m in row["messages"]][:3] == ["user", "assistant", "tool"], row["messages"][:3]
call = row["messages"][1]["tool_calls"][0]
assert call["type"] == "function" and isinstance(call["function"]["arguments"], str), call
assert json.loads(call["function"]["arguments"]) == exp["first_args"], call
assert row["messages"][2]["tool_call_id"] == call["id"], row["messages"][2]
assert sum(m["weight"] for m in row["messages"]) == exp["first_targets"]
assert row["metadata"]["split"] == "train" and row["metadata"]["purpose"] == "training"
turns = datasets.load_dataset("json", data_files=f"{d}/turns.jsonl", split="train")
assert turns.num_rows == exp["turns"], turns.num_rows
assert turns[0]["completion"][0]["role"] == "assistant" and turns[0]["id"].endswith("#0")
assert isinstance(turns[0]["tools"], list)
t = pq.read_table(f"{d}/full.parquet")
assert t.num_rows == exp["full"] and t.column_names == ["id", "messages", "tools", "metadata"], t.schema
pf = datasets.load_dataset("parquet", data_files=f"{d}/full.parquet", split="train")
assert pf.num_rows == exp["full"]
assert pf[0]["messages"][1]["tool_calls"][0]["function"]["name"] == exp["first_tool"]
tools = pf[exp["tools_row"]]["tools"]
assert isinstance(tools, list) and isinstance(tools[0], dict) and tools[0]["type"] == "function", tools[:1]
assert json.loads(pq.read_metadata(f"{d}/full.parquet").metadata[b"trajkit.card"])["rows"] == exp["full"]
tp = datasets.load_dataset("parquet", data_files=f"{d}/turns.parquet", split="train")
assert tp.num_rows == exp["turns"] and tp.column_names == ["id", "prompt", "completion", "tools", "metadata"]
# A shard folder loads through its card (dataset_info features), whatever the first shard holds.
sh = datasets.load_dataset(f"{d}/shards")
assert list(sh.keys()) == ["train"] and sh["train"].num_rows == exp["turns"], sh
assert isinstance(sh["train"][exp["tools_turn"]]["tools"][0], dict)
pq_sh = datasets.load_dataset("parquet", data_dir=f"{d}/pshards")
assert list(pq_sh.keys()) == ["train"] and pq_sh["train"].num_rows == exp["turns"], pq_sh
print("python contract ok", full.num_rows, turns.num_rows)
"##;

fn python_has_modules() -> bool {
    Command::new("python3")
        .args(["-c", "import datasets, pyarrow"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn run(lib: &Path, out: &Path, view: View, format: Option<Format>, shard: Option<u64>) -> u64 {
    let o = ExportOptions {
        view,
        format,
        filter: Filter {
            selection: Selection::All,
            split: Split::Train,
            sources: Vec::new(),
            purpose: Purpose::Training,
            dedup: Default::default(),
        },
        output: out.to_path_buf(),
        shard_size: shard,
        library_label: lib.display().to_string(),
        chat_template: None,
        redactor: None,
    };
    export(&Library::open(lib).expect("library"), &o).expect("export").entry.rows
}

#[test]
fn datasets_and_pyarrow_load_the_exports_as_they_are() {
    if !python_has_modules() {
        assert!(
            std::env::var_os("TRAJKIT_REQUIRE_PYTHON").is_none(),
            "TRAJKIT_REQUIRE_PYTHON is set but python3 cannot import datasets and pyarrow"
        );
        println!("skipped: python3 with datasets and pyarrow not available (pip install datasets pyarrow)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Real records of three families: ATIF (Terminus-2, OpenHands with tool definitions),
    // Gym (tool calls, rewards) and Claude Code via ATIF.
    let mut items = vec![
        (one("atif/terminus2-context-summarization-v1.7/trajectory.json"), Spec::new("terminus", "train", "success")),
        (one("atif/openhands-hello-world-v1.5.trajectory.json"), Spec::new("openhands", "train", "success")),
        (one("atif/claude-code-pass-v1.7.trajectory.json"), Spec::new("claude", "train", "success")),
    ];
    for t in support::records(&["gym/example_single_tool_call__example_rollouts.jsonl"]) {
        items.push((t, Spec::new("gym", "train", "unknown").family("tool-use")));
    }
    let lib = support::library(&dir.path().join("lib"), &items);
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let full = run(&lib, &out.join("full.jsonl.gz"), View::Full, None, None);
    let turns = run(&lib, &out.join("turns.jsonl"), View::AssistantTurn, None, None);
    assert_eq!(run(&lib, &out.join("full.parquet"), View::Full, None, None), full);
    assert_eq!(run(&lib, &out.join("turns.parquet"), View::AssistantTurn, None, None), turns);
    assert_eq!(run(&lib, &out.join("shards"), View::AssistantTurn, Some(Format::OpenAi), Some(7)), turns);
    assert_eq!(run(&lib, &out.join("pshards"), View::AssistantTurn, Some(Format::Parquet), Some(7)), turns);
    let first = trajkit_export::views::full_view(&items[0].0);
    let targets = first.targets;
    let expected = serde_json::json!({
        "full": full,
        "turns": turns,
        "first_args": {"duration": 0.1, "keystrokes": "mkdir test_dir\n"},
        "first_targets": targets,
        "first_tool": "bash_command",
        "tools_row": 1,
        // the first turn of the OpenHands record (the first record has 7 turns)
        "tools_turn": 7,
    });
    let o = Command::new("python3")
        .args(["-c", SCRIPT, out.to_str().unwrap(), &expected.to_string()])
        .output()
        .expect("run python3");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "python contract failed:\n{stderr}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(stdout.trim(), format!("python contract ok {full} {turns}"));
}
