use super::*;
use serde_json::{json, Value};

fn sample() -> Trajectory {
    let mut call_step = Step::new(Role::Assistant, Some(json!("looking")));
    call_step.tool_calls.push(ToolCall {
        arguments: json!({"b": 1, "a": [1.5, "x"]}).into(),
        arguments_invalid: false,
        extra: Extra::new(),
        id: Some("c1".into()),
        name: "ls".into(),
        text_embedded: false,
    });
    call_step.extra.insert("z".into(), Value::Null);
    let mut prov = Provenance::new("gym", "a.jsonl", "00");
    prov.line = Some(3);
    Trajectory {
        agent: Agent { model: Some("m".into()), name: Some("a".into()), version: None },
        steps: vec![Step::new(Role::User, Some(json!("hi"))), call_step],
        ..Trajectory::new("x-1", prov, Task { key: "k".into(), ..Default::default() })
    }
}

#[test]
fn a_new_record_has_only_its_id_origin_and_task() {
    let t =
        Trajectory::new("x-1", Provenance::new("gym", "a.jsonl", "00"), Task { key: "k".into(), ..Default::default() });
    assert_eq!(
        serde_json::to_string(&t).unwrap(),
        r#"{"agent":{},"content_digest":"","id":"x-1","outcome":{"status":"unknown","verification":"unverified"},"provenance":{"format":"gym","path":"a.jsonl","sha256":"00"},"schema_version":"trajkit.trajectory/2","steps":[],"task":{"key":"k","key_source":"instruction_hash"}}"#
    );
}

/// Recursively checks that every object's keys appear in sorted order in the text.
fn assert_sorted(text: &str) {
    fn walk(v: &Value) {
        if let Value::Object(m) = v {
            let keys: Vec<_> = m.keys().collect();
            let mut sorted = keys.clone();
            sorted.sort();
            assert_eq!(keys, sorted);
            m.values().for_each(walk);
        } else if let Value::Array(a) = v {
            a.iter().for_each(walk);
        }
    }
    // serde_json without preserve_order sorts on parse, so compare the text instead.
    let reparsed: Value = serde_json::from_str(text).unwrap();
    assert_eq!(serde_json::to_string(&reparsed).unwrap(), text, "keys not in sorted order");
    walk(&reparsed);
}

#[test]
fn canonical_json_has_sorted_keys_and_no_whitespace() {
    let mut t = sample();
    seal(&mut t).unwrap();
    let s = canonical::to_canonical_string(&t).unwrap();
    assert!(!s.contains(": ") && !s.contains(", "));
    assert_sorted(&s);
}

#[test]
fn digest_ignores_identity_and_provenance_but_not_content() {
    let mut a = sample();
    let mut b = sample();
    b.id = "other".into();
    b.provenance.path = "elsewhere.jsonl".into();
    b.provenance.line = Some(99);
    seal(&mut a).unwrap();
    seal(&mut b).unwrap();
    assert_eq!(a.content_digest, b.content_digest);
    assert_eq!(a.id, "x-1", "identity restored after hashing");
    b.steps[0].content = Some(json!("hi!").into());
    seal(&mut b).unwrap();
    assert_ne!(a.content_digest, b.content_digest);
}

#[test]
fn record_round_trips_through_canonical_json() {
    let mut t = sample();
    t.subagents.push(Subagent { spawned_by_step: Some(1), spawned_by_tool_call: None, trajectory: Box::new(sample()) });
    seal(&mut t).unwrap();
    let s = canonical::to_canonical_string(&t).unwrap();
    let back: Trajectory = serde_json::from_str(&s).unwrap();
    assert_eq!(back, t);
    assert_eq!(t.subagents[0].trajectory.content_digest.len(), 64);
}

#[test]
fn absent_figures_are_omitted_not_zero() {
    let m = Metrics { completion_tokens: Some(5), ..Default::default() };
    assert_eq!(serde_json::to_string(&m).unwrap(), r#"{"completion_tokens":5}"#);
}

#[test]
fn instruction_key_normalizes_whitespace_and_includes_environment() {
    let a = canonical::instruction_task_key("  Fix  the\nbug ", Some("env"));
    assert_eq!(a, canonical::instruction_task_key("Fix the bug", Some("env")));
    assert_ne!(a, canonical::instruction_task_key("Fix the bug", Some("other")));
    assert!(a.starts_with("h:") && a.len() == 18);
}

/// Synthetic: the three tiers of the task-key rule side by side; every reader's real
/// fixtures pin the keys they make.
#[test]
fn task_key_takes_the_explicit_key_then_the_instruction_then_the_record() {
    let sha = "0123456789abcdef0123";
    let t = Task::keyed(Some("env/7".into()), Some("7".into()), Some("Fix it".into()), Some("env".into()), sha);
    assert_eq!((t.key.as_str(), t.key_source, t.id.as_deref()), ("env/7", TaskKeySource::Explicit, Some("7")));
    assert_eq!(t.instruction.as_deref(), Some("Fix it"));
    let t = Task::keyed(None, Some("7".into()), Some("Fix it".into()), Some("env".into()), sha);
    assert_eq!(t.key, canonical::instruction_task_key("Fix it", Some("env")));
    assert_eq!(
        (t.key_source, t.id.as_deref(), t.environment.as_deref()),
        (TaskKeySource::InstructionHash, Some("7"), Some("env"))
    );
    let t = Task::keyed(None, None, None, None, sha);
    assert_eq!((t.key.as_str(), t.key_source), ("r:0123456789abcdef", TaskKeySource::RecordHash));
    assert_eq!(Task::keyed(None, None, None, None, "abc").key, "r:abc");
}

#[test]
fn gap_names_match_serde_names() {
    for k in GapKind::ALL {
        assert_eq!(serde_json::to_value(k).unwrap(), json!(k.as_str()));
    }
}

#[test]
fn role_status_and_verification_names_match_serde_names() {
    for r in Role::ALL {
        assert_eq!(serde_json::to_value(r).unwrap(), json!(r.as_str()));
    }
    for s in Status::ALL {
        assert_eq!(serde_json::to_value(s).unwrap(), json!(s.as_str()));
    }
    for v in Verification::ALL {
        assert_eq!(serde_json::to_value(v).unwrap(), json!(v.as_str()));
    }
}

#[test]
fn one_pass_writer_matches_serde_and_the_digest() {
    let mut t = sample();
    t.session_id = Some("s".into());
    t.gaps.push(Gap::at(GapKind::NoSteps, None, "x"));
    t.extra.insert("k".into(), json!({"id": "", "z": [1, 2.5]}));
    t.metrics = Some(Metrics { prompt_tokens: Some(3), ..Default::default() });
    t.tools = Some(vec![json!({"name": "f"}).into()]);
    t.state = Some(StateDigests { initial: Some("aa".into()), final_state: Some("bb".into()) });
    let mut out = Vec::new();
    canonical::write_sealed(&mut t, &mut out).unwrap();
    assert_eq!(String::from_utf8(out.clone()).unwrap(), canonical::to_canonical_string(&t).unwrap());
    // Every field, the schema-2 `state` included, is written: the plain serde form.
    assert_eq!(String::from_utf8(out).unwrap(), serde_json::to_string(&t).unwrap());
    let mut again = t.clone();
    seal(&mut again).unwrap();
    assert_eq!(again.content_digest, t.content_digest);
    // The digest is the hash of the canonical JSON without the three identity keys.
    let mut v = serde_json::to_value(&t).unwrap();
    for k in ["content_digest", "id", "provenance"] {
        v.as_object_mut().unwrap().remove(k);
    }
    assert_eq!(t.content_digest, sha256_hex(serde_json::to_string(&v).unwrap().as_bytes()));
}

#[test]
fn subagent_location_does_not_change_the_parent_digest() {
    let mut a = sample();
    a.subagents.push(Subagent { spawned_by_step: Some(1), spawned_by_tool_call: None, trajectory: Box::new(sample()) });
    let mut b = a.clone();
    b.subagents[0].trajectory.provenance.path = "elsewhere.json".into();
    b.subagents[0].trajectory.id = "other".into();
    let (mut oa, mut ob) = (Vec::new(), Vec::new());
    canonical::write_sealed(&mut a, &mut oa).unwrap();
    canonical::write_sealed(&mut b, &mut ob).unwrap();
    assert_eq!(a.content_digest, b.content_digest);
    assert_eq!(b.subagents[0].trajectory.id, "other");
}

/// Sealing with the interaction digest hashed beside the content digest writes the same bytes
/// and gives the same two digests as taking them one after the other, with and without
/// subagents (which take the one-by-one path).
#[test]
fn sealing_with_the_interaction_digest_matches_taking_both_apart() {
    let mut with_child = sample();
    with_child.subagents.push(Subagent {
        spawned_by_step: Some(1),
        spawned_by_tool_call: None,
        trajectory: Box::new(sample()),
    });
    for t in [sample(), with_child] {
        let (mut a, mut b) = (t.clone(), t);
        let (mut out_a, mut out_b) = (Vec::new(), Vec::new());
        canonical::write_sealed(&mut a, &mut out_a).unwrap();
        let interaction = canonical::write_sealed_with_interaction(&mut b, &mut out_b).unwrap();
        assert_eq!(out_a, out_b);
        assert_eq!(a.content_digest, b.content_digest);
        assert_eq!(interaction, Some(interaction_digest(&a).unwrap()));
    }
}

/// Records written blank and sealed as a group (`write_unsealed`, `seal_written`) get the text
/// and digest `write_sealed` gives each alone: records of different lengths, one buffer holding
/// text before the record and a newline after it, and a record with subagents, which is
/// sealed whole on the spot.
#[test]
fn records_sealed_as_a_group_match_each_sealed_alone() {
    let mut long = sample();
    long.steps.extend((0..40).map(|i| Step::new(Role::User, Some(json!(format!("step {i} {}", "x".repeat(i)))))));
    let mut with_child = sample();
    with_child.subagents.push(Subagent {
        spawned_by_step: Some(1),
        spawned_by_tool_call: None,
        trajectory: Box::new(sample()),
    });
    let records = [sample(), long, with_child];
    let mut expected = Vec::new();
    for t in &records {
        let mut out = Vec::new();
        canonical::write_sealed(&mut t.clone(), &mut out).unwrap();
        expected.push(out);
    }
    let mut buffers: Vec<Vec<u8>> = vec![Vec::new(), b"before ".to_vec(), Vec::new()];
    let mut open = Vec::new();
    for (t, buffer) in records.iter().zip(&mut buffers) {
        open.push(canonical::write_unsealed(&mut t.clone(), buffer).unwrap());
        buffer.push(b'\n');
    }
    assert!(open[0].is_some() && open[1].is_some() && open[2].is_none());
    let mut group: Vec<_> = buffers.iter_mut().zip(open).filter_map(|(b, u)| Some((b, u?))).collect();
    canonical::seal_written(&mut group);
    let prefix: [&[u8]; 3] = [b"", b"before ", b""];
    for ((buffer, want), prefix) in buffers.iter().zip(&expected).zip(prefix) {
        assert_eq!(buffer, &[prefix, want.as_slice(), b"\n"].concat());
    }
}

/// Other messages hashed in the lanes of a group (`seal_written_with`: `build` adds the
/// records' interactions, written by `write_interaction`) get their own SHA-256, and the
/// records the digests `write_sealed` gives them.
#[test]
fn messages_sealed_with_a_group_get_their_own_digests() {
    let mut long = sample();
    long.steps.extend((0..30).map(|i| Step::new(Role::Assistant, Some(json!("y".repeat(i * 7))))));
    let records = [sample(), long];
    let mut interactions = Vec::new();
    let mut ranges = Vec::new();
    for t in &records {
        let start = interactions.len();
        crate::interaction::write_interaction(t, &mut interactions).unwrap();
        ranges.push(start..interactions.len());
    }
    let mut others: Vec<&[u8]> = ranges.iter().map(|r| &interactions[r.clone()]).collect();
    others.push(b"abc");
    let mut buffers: Vec<Vec<u8>> = vec![Vec::new(), Vec::new()];
    let mut open = Vec::new();
    for (t, buffer) in records.iter().zip(&mut buffers) {
        open.push(canonical::write_unsealed(&mut t.clone(), buffer).unwrap().unwrap());
    }
    let mut group: Vec<_> = buffers.iter_mut().zip(open).collect();
    let digests: Vec<String> =
        canonical::seal_written_with(&mut group, &others).iter().map(|d| canonical::hex(d)).collect();
    let mut want = Vec::new();
    for (t, buffer) in records.iter().zip(&buffers) {
        let (mut alone, mut out) = (t.clone(), Vec::new());
        canonical::write_sealed(&mut alone, &mut out).unwrap();
        assert_eq!(buffer, &out);
        want.push(alone.content_digest);
    }
    want.extend(records.iter().map(|t| interaction_digest(t).unwrap()));
    want.push("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad".into());
    assert_eq!(digests, want);
}

/// The interaction digest of a record with quotes, backslashes, control characters and
/// non-ASCII in its content, pinned: the writer behind it may change, the bytes may not.
#[test]
fn interaction_digest_is_pinned() {
    let mut t = sample();
    t.steps.push(Step::new(Role::Tool, Some(json!("a \"quoted\" \\ path\n\ttab \u{1} é 😀 \u{7f}"))));
    t.task.instruction = Some("fix `x`\r\n".into());
    assert_eq!(interaction_digest(&t).unwrap(), "394b66bbe94c0b27bace32b9d07cd7fcc3f7eb5250bae2537240b6e3359a5f89");
}

#[test]
fn instruction_words_split_like_split_whitespace() {
    // Every ASCII byte between two words, and the Unicode spaces on the slow path.
    let mut texts: Vec<String> = (0u8..128).map(|b| format!(" a{}b  c\t", b as char)).collect();
    // Synthetic: pseudo-random texts of words and whitespace runs crossing the 16-byte chunks.
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    for _ in 0..3000 {
        let mut text = String::new();
        while text.len() < (seed % 80) as usize + 1 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            text.push_str(
                ["word", "a", " ", " ", "  ", "\n", "\t", "\r\n", "\x0B", "xyz.", "\x0C "][(seed % 11) as usize],
            );
        }
        texts.push(text);
    }
    texts.extend(["\u{a0}x\u{3000}y\u{2028}", "x\u{85}y", "\x0B\x0C", "", "   ", "\x1cx\x1fy"].map(String::from));
    for t in &texts {
        let expected = t.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(canonical::normalize_instruction(t), expected, "{t:?}");
        use sha2::Digest;
        let mut h = sha2::Sha256::new();
        h.update(b"env\0");
        h.update(expected.as_bytes());
        let digest = canonical::hex(&h.finalize());
        assert_eq!(canonical::instruction_task_key(t, Some("env")), format!("h:{}", &digest[..16]), "{t:?}");
    }
}
