//! The Form serializer round-trip suite: known keys in a fixed order,
//! unknown keys and comments byte-for-byte, the body untouched.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use evoflux_agents::team::agent_file::KNOWN_KEYS;
use evoflux_agents::team::form::{AgentForm, FormError, read_form, unknown_entries, write_form};

const RICH: &str = "\
---
# Header comment about this agent
name: analyst
role: member
description: Looks at numbers
model: openai:gpt-4o   # pinned on purpose
tools:
  - web_fetch
  - read
x-ui:
  color: teal   # keep me
  pinned: true
notes: |
  Multi-line block
    with indentation

  and a blank line inside.
lead: research-lead
'quoted key': \"value with: colon\"
list-flow: [a, b,
  c]
# trailing comment
---
Body line 1
<!-- keep this comment -->
";

const SAMPLES: &[&str] = &[
    RICH,
    "---\nname: a\n---\n",
    "---\nrole: lead\nunknown: 1\n---\nprompt\n",
    "---\r\nname: crlf\r\nx-extra: yes\r\ntools: [read]\r\n---\r\nBody\r\n",
    "---\nz-first: 1\nname: b\nskills_opt_out: [x]\nrole: member\n---\n\n\nbody with leading blank lines",
    "\u{feff}\n---\nname: bom\n---\nhi",
];

#[test]
fn unchanged_form_in_canonical_order_is_byte_identical() {
    for text in [
        SAMPLES[1],
        "---\r\nname: crlf\r\ntools: [read]\r\nx-extra: yes\r\n---\r\nBody\r\n",
        "---\nname: a\nrole: lead\n# c\nx: 1\n---\nbody\n",
    ] {
        let (form, _) = read_form(text).unwrap();
        assert_eq!(write_form(text, &form, None).unwrap(), text);
    }
}

#[test]
fn round_trip_preserves_unknown_entries_exactly() {
    for text in SAMPLES {
        let (form, body) = read_form(text).unwrap();
        let out = write_form(text, &form, None).unwrap();
        // Unknown entries (with their comments) survive byte-for-byte and in
        // order.
        assert_eq!(
            unknown_entries(&out).unwrap(),
            unknown_entries(text).unwrap(),
            "{text:?}"
        );
        for e in unknown_entries(text).unwrap() {
            assert!(out.contains(&e), "{e:?} lost from {out:?}");
        }
        // The values read back are the same, and the body is untouched.
        let (again, body2) = read_form(&out).unwrap();
        assert_eq!(again, form);
        assert_eq!(body2, body);
        assert!(out.ends_with(&body));
        // Saving twice changes nothing more.
        assert_eq!(write_form(&out, &again, None).unwrap(), out);
    }
}

#[test]
fn edited_known_keys_are_rewritten_in_fixed_order() {
    let (mut form, _) = read_form(RICH).unwrap();
    form.description = Some("Analyses data".into());
    form.tools = Some(vec!["read".into(), "grep".into()]);
    form.thinking_level = Some("high".into());
    form.model = Some("openai:gpt-4o".into()); // unchanged: inline comment kept
    let out = write_form(RICH, &form, None).unwrap();
    insta::assert_snapshot!(out);
    let keys: Vec<String> = evoflux_core::frontmatter::parse(&out)
        .unwrap()
        .mapping
        .keys()
        .filter_map(|k| k.as_str().map(str::to_owned))
        .collect();
    let known: Vec<&String> = keys
        .iter()
        .filter(|k| KNOWN_KEYS.contains(&k.as_str()))
        .collect();
    let mut expected = known.clone();
    expected.sort_by_key(|k| KNOWN_KEYS.iter().position(|o| o == k));
    assert_eq!(known, expected);
    assert!(out.contains("model: openai:gpt-4o   # pinned on purpose\n"));
}

#[test]
fn crlf_files_stay_crlf_when_edited() {
    let text = SAMPLES[3];
    let (mut form, _) = read_form(text).unwrap();
    form.description = Some("new".into());
    let out = write_form(text, &form, None).unwrap();
    assert!(!out.replace("\r\n", "").contains('\n'), "{out:?}");
    assert!(out.contains("description: new\r\n"));
}

#[test]
fn known_keys_move_before_unknown_ones() {
    let text = "---\nz-first: 1  # z\nname: b\nrole: member\n---\nbody";
    let (form, _) = read_form(text).unwrap();
    let out = write_form(text, &form, None).unwrap();
    assert_eq!(
        out,
        "---\nname: b\nrole: member\nz-first: 1  # z\n---\nbody"
    );
}

#[test]
fn retired_and_removed_keys_are_dropped() {
    let text = SAMPLES[4];
    let (mut form, _) = read_form(text).unwrap();
    form.role = None;
    let out = write_form(text, &form, None).unwrap();
    assert!(!out.contains("skills_opt_out"));
    assert!(!out.contains("role:"));
    assert!(out.contains("z-first: 1\n"));
}

#[test]
fn body_is_replaced_only_when_given() {
    let (form, _) = read_form(RICH).unwrap();
    let out = write_form(RICH, &form, Some("New prompt\n")).unwrap();
    assert!(out.ends_with("---\nNew prompt\n"));
    assert!(out.contains("x-ui:\n  color: teal   # keep me\n"));
}

#[test]
fn file_without_front_matter_gets_one() {
    let form = AgentForm {
        name: Some("n".into()),
        role: Some("lead".into()),
        ..AgentForm::default()
    };
    assert_eq!(
        write_form("Just a prompt\n", &form, None).unwrap(),
        "---\nname: n\nrole: lead\n---\nJust a prompt\n"
    );
}

#[test]
fn hostile_nesting_is_refused_before_the_form_parses_it() {
    let text = format!(
        "---\nname: a\ntools: {}{}\n---\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    match read_form(&text) {
        Err(FormError::FrontMatter(message)) => {
            assert!(message.contains("line 2 of the front matter"), "{message}")
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(matches!(
        write_form(&text, &AgentForm::default(), None),
        Err(FormError::FrontMatter(_))
    ));
}

#[test]
fn yaml_that_cannot_be_cut_is_refused_not_mangled() {
    let text = "---\nname: a\nbase: &b {x: 1}\nother: *b\n---\n";
    assert!(matches!(read_form(text), Err(FormError::Unsupported(_))));
    assert!(matches!(
        write_form(text, &AgentForm::default(), None),
        Err(FormError::Unsupported(_))
    ));
    assert!(matches!(
        read_form("---\nname: [unclosed\n---\n"),
        Err(FormError::Unsupported(_) | FormError::FrontMatter(_))
    ));
}
