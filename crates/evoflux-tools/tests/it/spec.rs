//! The schema the model sees and the executor that runs the call agree:
//! every field the schema offers is accepted, and every integer bound it
//! states is exactly where the executor starts refusing. The schemas are
//! read from the compiled framework definitions, not restated here, so a
//! bound changed on one side only fails this test.

use std::collections::BTreeSet;

use evoflux_graph::tool::framework_tool;
use evoflux_tools::{
    EditInput, GlobInput, GrepInput, LsInput, ProcessRequest, ReadInput, ShellRequest, ToolError,
    WriteInput,
};
use serde_json::{Value, json};

type Parse = fn(&Value) -> Result<(), ToolError>;

fn schema(tool: &str) -> Value {
    framework_tool(tool)
        .unwrap_or_else(|| panic!("{tool} is not a framework tool"))
        .input_schema
}

fn properties(tool: &str) -> serde_json::Map<String, Value> {
    schema(tool)["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default()
}

/// The executor-side parser of each schema-validated tool, with the
/// smallest valid input.
fn executors() -> Vec<(&'static str, Parse, Value)> {
    vec![
        (
            "shell",
            |v| ShellRequest::parse(v).map(drop),
            json!({"command": "true"}),
        ),
        (
            "process",
            |v| ProcessRequest::parse(v).map(drop),
            json!({"action": "list"}),
        ),
        (
            "read",
            |v| ReadInput::parse(v).map(drop),
            json!({"path": "a"}),
        ),
        (
            "write",
            |v| WriteInput::parse(v).map(drop),
            json!({"path": "a", "content": ""}),
        ),
        (
            "edit",
            |v| EditInput::parse(v).map(drop),
            json!({"path": "a", "old_string": "x", "new_string": "y"}),
        ),
        ("ls", |v| LsInput::parse(v).map(drop), json!({})),
        (
            "glob",
            |v| GlobInput::parse(v).map(drop),
            json!({"pattern": "*"}),
        ),
        (
            "grep",
            |v| GrepInput::parse(v).map(drop),
            json!({"pattern": "x"}),
        ),
    ]
}

fn with(base: &Value, field: &str, value: Value) -> Value {
    let mut v = base.clone();
    v[field] = value;
    v
}

fn refused(parse: Parse, input: &Value) -> bool {
    match parse(input) {
        Ok(()) => false,
        Err(e) => e.code() == "tool/input-invalid",
    }
}

#[test]
fn every_executor_accepts_exactly_the_fields_its_schema_offers() {
    let fields: [(&str, &[&str]); 8] = [
        ("shell", ShellRequest::FIELDS),
        ("process", ProcessRequest::FIELDS),
        ("read", ReadInput::FIELDS),
        ("write", WriteInput::FIELDS),
        ("edit", EditInput::FIELDS),
        ("ls", LsInput::FIELDS),
        ("glob", GlobInput::FIELDS),
        ("grep", GrepInput::FIELDS),
    ];
    for (tool, accepted) in fields {
        let offered: BTreeSet<String> = properties(tool).keys().cloned().collect();
        let accepted: BTreeSet<String> = accepted.iter().map(|f| (*f).to_owned()).collect();
        assert_eq!(offered, accepted, "{tool}");
        let required: BTreeSet<String> = schema(tool)["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r.as_str().map(str::to_owned))
            .collect();
        assert!(required.is_subset(&accepted), "{tool}");
    }
}

#[test]
fn every_integer_bound_in_a_schema_is_where_the_executor_refuses() {
    let mut checked = 0;
    for (tool, parse, base) in executors() {
        assert!(parse(&base).is_ok(), "{tool}: the base input is valid");
        for (field, prop) in properties(tool) {
            if prop["type"] != "integer" {
                continue;
            }
            let min = prop["minimum"].as_u64();
            let max = prop["maximum"].as_u64();
            if let Some(min) = min {
                assert!(
                    parse(&with(&base, &field, json!(min))).is_ok(),
                    "{tool}.{field}: the schema's minimum {min} is accepted"
                );
                if let Some(below) = min.checked_sub(1) {
                    assert!(
                        refused(parse, &with(&base, &field, json!(below))),
                        "{tool}.{field}: {below}, below the schema's minimum, is refused"
                    );
                }
            }
            match max {
                Some(max) => {
                    assert!(
                        parse(&with(&base, &field, json!(max))).is_ok(),
                        "{tool}.{field}: the schema's maximum {max} is accepted"
                    );
                    assert!(
                        refused(parse, &with(&base, &field, json!(max + 1))),
                        "{tool}.{field}: {}, above the schema's maximum, is refused",
                        max + 1
                    );
                }
                // No stated maximum: a large value is not refused either.
                None => assert!(
                    parse(&with(&base, &field, json!(1_000_000))).is_ok(),
                    "{tool}.{field}: the schema states no maximum"
                ),
            }
            checked += 1;
        }
    }
    // shell (2), process (1), read (2), glob (1), grep (2).
    assert_eq!(checked, 8);
}

#[test]
fn grep_pattern_length_is_the_schema_max_length() {
    let max = properties("grep")["pattern"]["maxLength"]
        .as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or_default();
    assert_eq!(max, evoflux_tools::GREP_MAX_PATTERN);
    assert!(GrepInput::parse(&json!({"pattern": "é".repeat(max)})).is_ok());
    let long = GrepInput::parse(&json!({"pattern": "é".repeat(max + 1)})).unwrap_err();
    assert_eq!(long.code(), "tool/input-invalid");
}

#[test]
fn process_actions_are_the_schema_enum() {
    let actions = properties("process")["action"]["enum"].clone();
    let actions = actions.as_array().cloned().unwrap_or_default();
    assert_eq!(actions.len(), 4);
    for action in actions {
        let r = ProcessRequest::parse(&json!({"action": action}));
        assert!(r.is_ok(), "{action}");
    }
    assert!(refused(
        |v| ProcessRequest::parse(v).map(drop),
        &json!({"action": "kill"})
    ));
}

#[test]
fn shell_defaults_stated_in_the_schema_are_the_executors() {
    let props = properties("shell");
    assert_eq!(
        props["timeout_seconds"]["description"],
        format!("Default {}.", evoflux_tools::SHELL_DEFAULT_TIMEOUT_SECONDS)
    );
    assert_eq!(
        props["yield_time_ms"]["description"],
        format!("Default {}.", evoflux_tools::SHELL_DEFAULT_YIELD_MS)
    );
}
