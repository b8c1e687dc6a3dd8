#![allow(clippy::unwrap_used, clippy::expect_used)]

//! What model calls cost, through the real binary: every call priced from
//! `[prices]`, per-call, per-turn and per-session figures that add up
//! exactly, `[limits] max_cost_usd` stopping a session before its next
//! call, and one prompt-cache key per session on the OpenAI wire.

use crate::common;

use common::fake_model::FakeModel;
use common::{Sandbox, events, of_type, run, run_ok, script, session_id};
use serde_json::Value;

/// Dollars in JSON back to whole picodollars: exact for any amount below
/// about $9,000, since an f64 holds 53 bits.
fn picos(v: &Value) -> u64 {
    (v.as_f64().unwrap_or_else(|| panic!("not an amount: {v}")) * 1e12).round() as u64
}

/// `[prices]` for every scripted model: $3 in, $0.30 cached, $3.75 cache
/// write, $15 out per million tokens, i.e. these picodollars per token.
const PRICES: &str = r#"
[prices."scripted:*"]
input = 3.0
cached_input = 0.30
cache_write = 3.75
output = 15.0
"#;
const IN: u64 = 3_000_000;
const CACHED: u64 = 300_000;
const WRITE: u64 = 3_750_000;
const OUT: u64 = 15_000_000;

/// What a call costs, worked out here rather than by the code under test:
/// (input, cached, written, output) tokens.
fn expected(input: u64, cached: u64, written: u64, output: u64) -> u64 {
    (input - cached - written) * IN + cached * CACHED + written * WRITE + output * OUT
}

#[test]
fn every_call_is_priced_and_each_total_is_the_exact_sum_of_its_calls() {
    let s = Sandbox::new();
    s.user("config.toml", PRICES);
    s.write(s.repo().join("notes.txt"), "the answer is 42\n");
    let model = script(
        &s,
        "priced.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: read, arguments: {path: notes.txt}}
      usage: {input_tokens: 1000, output_tokens: 50, cache_write_input_tokens: 800}
  - expect: {tool_result: {contains: "42"}}
    reply:
      tool_calls:
        - {name: ls, arguments: {path: .}}
      usage: {input_tokens: 1200, output_tokens: 40, cached_input_tokens: 800, cache_write_input_tokens: 300}
  - reply:
      text: It is 42.
      usage: {input_tokens: 1300, output_tokens: 20, cached_input_tokens: 1100}
"#,
    );
    let ev = run_ok(
        &s,
        &[
            "--json",
            "run",
            "--mode",
            "coding",
            "--model",
            &model,
            "what is the answer?",
        ],
    );
    let calls = [
        expected(1000, 0, 800, 50),
        expected(1200, 800, 300, 40),
        expected(1300, 1100, 0, 20),
    ];
    let seen: Vec<u64> = of_type(&ev, "model_call_completed")
        .iter()
        .map(|e| {
            assert_eq!(e["purpose"], "turn");
            picos(&e["usage"]["cost_usd"])
        })
        .collect();
    assert_eq!(seen, calls);
    let total: u64 = calls.iter().sum();
    let done = of_type(&ev, "turn_completed")[0];
    assert_eq!(picos(&done["usage"]["cost_usd"]), total);
    assert_eq!(done["usage"]["requests"], 3);
    assert_eq!(done["usage"]["cache_read_tokens"], 1900);
    assert_eq!(done["usage"]["cache_write_tokens"], 1100);
    assert_eq!(picos(&done["session_usage"]["cost_usd"]), total);

    let id = session_id(&ev);
    let shown = s.json(&["--json", "sessions", "show", &id]);
    assert_eq!(picos(&shown["usage"]["cost_usd"]), total);
    assert_eq!(picos(&shown["usage_with_children"]["cost_usd"]), total);
    assert_eq!(shown["usage"]["unpriced_requests"], 0);
    let list = s.json(&["--json", "sessions", "list"]);
    assert_eq!(list[0]["id"], id.as_str());
    assert_eq!(picos(&list[0]["usage_with_children"]["cost_usd"]), total);

    // People read the same figure, to four decimals.
    let dollars = format!("${:.4}", total as f64 / 1e12);
    let text = String::from_utf8_lossy(&s.run(&["sessions", "show", &id]).stdout).into_owned();
    assert!(
        text.contains("1900 read from the provider's cache")
            && text.contains(&format!("cost {dollars}")),
        "{text}"
    );
    let listed = String::from_utf8_lossy(&s.run(&["sessions", "list"]).stdout).into_owned();
    assert!(listed.contains(&dollars), "{listed}");
}

#[test]
fn a_session_that_has_spent_its_limit_makes_no_further_model_call() {
    let s = Sandbox::new();
    // $0.01 allowed; the first call alone costs 4,000 × $3/M = $0.012.
    s.user(
        "config.toml",
        &format!("{PRICES}\n[limits]\nmax_cost_usd = 0.01\n"),
    );
    let model = script(
        &s,
        "spend.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: ls, arguments: {path: .}}
      usage: {input_tokens: 4000, output_tokens: 0}
  - reply:
      text: never sent
"#,
    );
    let out = run(
        &s,
        &[
            "--json",
            "run",
            "--mode",
            "coding",
            "--model",
            &model,
            "look around",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ev = events(&out);
    // The call that crossed the limit ran its tool; no call followed.
    assert_eq!(of_type(&ev, "tool_ended").len(), 1);
    assert_eq!(of_type(&ev, "model_call_completed").len(), 1);
    let done = of_type(&ev, "turn_completed")[0];
    assert_eq!(done["status"], "cost_limit_reached");
    assert!(
        done["text"].as_str().unwrap().contains("max_cost_usd"),
        "{done}"
    );
    let id = session_id(&ev);

    // Resuming does not start another call either, in a new process and
    // on another model; the person is told why.
    let next = script(
        &s,
        "next.yaml",
        "turns:\n  - reply: {text: still never sent}\n",
    );
    let out = run(&s, &["sessions", "resume", &id, "--model", &next, "go on"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error[limits/max-cost-reached]"),
        "{stderr}"
    );
    assert!(stderr.contains("$0.0120"), "{stderr}");
    let shown = s.json(&["--json", "sessions", "show", &id]);
    assert_eq!(shown["usage"]["requests"], 1);
    assert_eq!(picos(&shown["usage"]["cost_usd"]), 4000 * IN);
}

#[test]
fn one_session_s_openai_calls_share_one_prompt_cache_key_and_an_unlisted_model_is_unpriced() {
    let fake = FakeModel::start();
    let s = Sandbox::new();
    let provider = format!(
        "[providers.fake]\nkind = \"openai\"\nbase_url = \"{}\"\n",
        fake.url
    );
    s.user("config.toml", &provider);
    let ev = run_ok(&s, &["--json", "run", "--model", "fake:m", "first"]);
    let id = session_id(&ev);
    run_ok(&s, &["--json", "sessions", "resume", &id, "second"]);
    let (keys, bodies) = FakeModel::without_cache_keys(&fake.take());
    // Each message: the skill resolver's call (no conversation, no key)
    // and the turn's, keyed by the session.
    let turn_keys: Vec<&str> = keys.iter().flatten().map(String::as_str).collect();
    assert_eq!(turn_keys, [id.as_str(), id.as_str()], "{bodies:#?}");
    assert_eq!(keys.len(), 4);

    // The fake server's usage: 100 in, 80 of them cached, 1 out, per call.
    let shown = s.json(&["--json", "sessions", "show", &id]);
    assert_eq!(shown["usage"]["requests"], 4, "resolver calls count too");
    assert_eq!(shown["usage"]["cache_read_tokens"], 320);
    assert_eq!(shown["usage"]["unpriced_requests"], 4);
    let text = String::from_utf8_lossy(&s.run(&["sessions", "show", &id]).stdout).into_owned();
    assert!(
        text.contains("cost unpriced") && text.contains("[prices]"),
        "{text}"
    );

    // Priced, a new session costs the cached tokens at the cached price.
    s.user(
        "config.toml",
        &format!(
            "{provider}\n[prices.\"fake:m\"]\ninput = 2.0\ncached_input = 0.5\noutput = 8.0\n"
        ),
    );
    let ev = run_ok(&s, &["--json", "run", "--model", "fake:m", "third"]);
    let other = session_id(&ev);
    assert_ne!(other, id);
    let (keys, _) = FakeModel::without_cache_keys(&fake.take());
    assert_eq!(keys.iter().flatten().collect::<Vec<_>>(), [&other]);
    let per_call = 20 * 2_000_000 + 80 * 500_000 + 8_000_000;
    let calls: Vec<u64> = of_type(&ev, "model_call_completed")
        .iter()
        .map(|e| picos(&e["usage"]["cost_usd"]))
        .collect();
    assert_eq!(calls, [per_call, per_call]);
    let purposes: Vec<&Value> = of_type(&ev, "model_call_completed")
        .iter()
        .map(|e| &e["purpose"])
        .collect();
    assert_eq!(purposes, ["skill_resolution", "turn"]);
}

#[test]
fn a_resolver_model_decides_at_its_own_price_and_resolver_off_makes_no_side_call() {
    let fake = FakeModel::start();
    let s = Sandbox::new();
    let providers = format!(
        "[providers.fake]\nkind = \"openai\"\nbase_url = \"{url}\"\n\
         [providers.fast]\nkind = \"openai\"\nbase_url = \"{url}\"\n\
         [prices.\"fake:m\"]\ninput = 2.0\noutput = 8.0\n\
         [prices.\"fast:tiny\"]\ninput = 0.1\noutput = 0.4\n",
        url = fake.url
    );
    s.user(
        "config.toml",
        &format!("{providers}[skills]\nresolver_model = \"fast:tiny\"\n"),
    );
    let ev = run_ok(&s, &["--json", "run", "--model", "fake:m", "hello"]);
    let bodies: Vec<Value> = fake
        .take()
        .iter()
        .map(|b| serde_json::from_str(b).unwrap())
        .collect();
    let mut models: Vec<&str> = bodies
        .iter()
        .map(|b| b["model"].as_str().unwrap())
        .collect();
    models.sort_unstable();
    assert_eq!(models, ["m", "tiny"]);
    // The fake's usage per call: 100 in (80 cached, priced as input here), 1 out.
    let calls: Vec<(String, String, u64)> = of_type(&ev, "model_call_completed")
        .iter()
        .map(|e| {
            (
                e["purpose"].as_str().unwrap().to_owned(),
                e["model"].as_str().unwrap().to_owned(),
                picos(&e["usage"]["cost_usd"]),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            (
                "skill_resolution".into(),
                "tiny".into(),
                100 * 100_000 + 400_000
            ),
            ("turn".into(), "m".into(), 100 * 2_000_000 + 8_000_000),
        ]
    );
    let done = of_type(&ev, "turn_completed");
    assert_eq!(
        picos(&done[0]["usage"]["cost_usd"]),
        100 * 100_000 + 400_000 + 100 * 2_000_000 + 8_000_000
    );

    s.user(
        "config.toml",
        &format!("{providers}[skills]\nresolver = \"off\"\n"),
    );
    let ev = run_ok(&s, &["--json", "run", "--model", "fake:m", "hello"]);
    assert_eq!(fake.take().len(), 1, "no resolver call");
    assert_eq!(of_type(&ev, "model_call_completed").len(), 1);

    // A resolver model on no defined provider is refused with its field.
    s.user(
        "config.toml",
        &format!("{providers}[skills]\nresolver_model = \"nowhere:x\"\n"),
    );
    let out = run(&s, &["--json", "run", "--model", "fake:m", "hello"]);
    assert_ne!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("config/provider-unknown"), "{stderr}");
    assert!(stderr.contains("skills.resolver_model"), "{stderr}");
}

/// A call that fails after its usage came (an empty reply, which the wire
/// refuses as `model/empty-reply`) was still served and billed: its usage
/// counts with the session's, like every call the server answered.
#[test]
fn a_failed_call_s_usage_still_counts() {
    let fake = FakeModel::answering(|_| String::new());
    let s = Sandbox::new();
    let provider = format!(
        "[providers.fake]\nkind = \"openai\"\nbase_url = \"{}\"\n",
        fake.url
    );
    s.user("config.toml", &provider);
    let out = run(&s, &["--json", "run", "--model", "fake:m", "first"]);
    assert!(!out.status.success());
    let ev = events(&out);
    let codes: Vec<&str> = of_type(&ev, "error")
        .iter()
        .filter_map(|e| e["code"].as_str())
        .collect();
    assert!(codes.contains(&"model/empty-reply"), "{codes:?}");
    let id = session_id(&ev);
    let calls = fake.take().len();
    assert!(calls >= 1);
    let shown = s.json(&["--json", "sessions", "show", &id]);
    assert_eq!(
        shown["usage"]["requests"],
        u64::try_from(calls).unwrap(),
        "every call the server answered counts"
    );
}
