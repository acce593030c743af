#!/usr/bin/env python3
"""Writes the contacts test trajectories (canonical trajkit records) of this directory.

These are synthetic by nature: they are recordings of the test environment
tests/env/contacts_env.py, made for the replay, counterfactual and admission tests. The
state digests come from `trajkit replay` itself (one replay of the record without digests),
so regenerate the files with:

    cargo build -p trajkit && python3 tests/env/contacts/make_fixtures.py target/debug/trajkit
"""

import hashlib
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ENV = "python3 tests/env/contacts_env.py"
INSTRUCTION = "Add Ada Lovelace (ada@example.com) to my contacts and tag her as vip."

# (file, id, actions as (tool, arguments, recorded observation))
ROUTES = [
    (
        "tag_ada.json",
        "contacts-tag-ada-reference",
        [
            ("search_contacts", {"query": "Ada"}, []),
            ("create_contact", {"name": "Ada Lovelace", "email": "ada@example.com"}, {"id": 4}),
            ("add_tag", {"contact_id": 4, "tag": "vip"}, {"ok": True}),
        ],
    ),
    (
        "tag_ada_alternate.json",
        "contacts-tag-ada-alternate",
        [
            ("create_contact", {"name": "Ada Lovelace", "email": "ada@old.example.com"}, {"id": 4}),
            ("update_contact", {"contact_id": 4, "email": "ada@example.com"}, {"ok": True}),
            ("add_tag", {"contact_id": 4, "tag": "vip"}, {"ok": True}),
        ],
    ),
    (
        "tag_ada_collateral.json",
        "contacts-tag-ada-collateral",
        [
            ("create_contact", {"name": "Ada Lovelace", "email": "ada@example.com"}, {"id": 4}),
            ("add_tag", {"contact_id": 4, "tag": "vip"}, {"ok": True}),
            ("delete_contact", {"contact_id": 2}, {"ok": True}),
        ],
    ),
]


def canonical(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def record(file, rid, actions, state):
    steps = [{"content": INSTRUCTION, "role": "user"}]
    for i, (tool, args, obs) in enumerate(actions, start=1):
        call = "call_%d" % i
        steps.append({"role": "assistant", "tool_calls": [{"arguments": args, "id": call, "name": tool}]})
        steps.append({"role": "tool", "tool_results": [{"call_id": call, "content": canonical(obs)}]})
    steps.append({"content": "Done: Ada Lovelace is in your contacts, tagged vip.", "role": "assistant"})
    rec = {
        "agent": {"name": "contacts-test-script"},
        "content_digest": "",
        "id": rid,
        "outcome": {"status": "success", "verification": "source_reported"},
        "provenance": {"format": "contacts-test-env", "path": "tests/env/contacts/" + file},
        "schema_version": "trajkit.trajectory/2",
        "steps": steps,
        "task": {"environment": "contacts-test-env", "instruction": INSTRUCTION, "key": "contacts/tag-ada", "key_source": "explicit"},
    }
    if state:
        rec["state"] = state
    hashed = {k: v for k, v in rec.items() if k not in ("content_digest", "id", "provenance")}
    rec["content_digest"] = hashlib.sha256(canonical(hashed).encode()).hexdigest()
    # The record is its own source: provenance.sha256 is that of its canonical content.
    rec["provenance"]["sha256"] = rec["content_digest"]
    return rec


def main():
    trajkit = sys.argv[1]
    root = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
    for file, rid, actions in ROUTES:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as tmp:
            tmp.write(canonical(record(file, rid, actions, None)))
        out = subprocess.run(
            [trajkit, "replay", tmp.name, "--env", ENV, "--times", "1", "--json"],
            cwd=root, capture_output=True, text=True,
        )
        os.unlink(tmp.name)
        report = json.loads(out.stdout)
        run = report["runs"][0]
        rec = record(file, rid, actions, {"final": run["final"], "initial": run["initial"]})
        with open(os.path.join(HERE, file), "w") as f:
            f.write(json.dumps(rec, sort_keys=True, indent=2, ensure_ascii=False) + "\n")
        print(file, run["initial"][:12], run["final"][:12])


if __name__ == "__main__":
    main()
