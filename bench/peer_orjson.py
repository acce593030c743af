"""The throw-away script a user would write instead of trajkit: NeMo Gym rollouts to
OpenAI-style `messages` JSON Lines, gzip level 1, with orjson. It checks nothing: a row
without the expected shape is skipped silently. Used by bench/peers.sh as the peer of
`trajkit convert` (issue 14's table).

Usage: python3 bench/peer_orjson.py OUT.jsonl.gz INPUT.jsonl...
"""

import gzip
import sys

import orjson


def text_of(content):
    """The text of a message's content: a string, or its text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def messages(row):
    """The rollout's prompt and output items as chat messages, or None."""
    try:
        prompt = row["responses_create_params"]["input"]
        output = row["response"]["output"]
    except (KeyError, TypeError):
        return None
    out = []
    for m in prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]:
        if isinstance(m, dict) and "role" in m:
            out.append({"role": m["role"], "content": text_of(m.get("content"))})
    for item in output if isinstance(output, list) else []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "message":
            out.append({"role": item.get("role", "assistant"), "content": text_of(item.get("content"))})
        elif kind == "function_call":
            call = {"id": item.get("call_id"), "type": "function",
                    "function": {"name": item.get("name"), "arguments": item.get("arguments")}}
            out.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif kind == "function_call_output":
            out.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": text_of(item.get("output"))})
    return out


def main():
    out_path, inputs = sys.argv[1], sys.argv[2:]
    written = 0
    with gzip.open(out_path, "wb", compresslevel=1) as out:
        for path in inputs:
            with open(path, "rb") as f:
                for line in f:
                    try:
                        msgs = messages(orjson.loads(line))
                    except orjson.JSONDecodeError:
                        continue
                    if msgs:
                        out.write(orjson.dumps({"messages": msgs}) + b"\n")
                        written += 1
    print(f"{written} rows", file=sys.stderr)


if __name__ == "__main__":
    main()
