//! What a run answered, in the one shape the checks read whether a lead's
//! turn or a worker's task gave it, and the rule `text_contains` and
//! `text_not_contains` read it by.
//!
//! A turn that must end with a structured result (`output_schema`) answers
//! through `final_output`: its answer is that result, and its last text may
//! be empty. So the checked answer is the final text and the result
//! together, never the text alone.

use serde_json::Value;

/// What a run answered.
#[derive(Debug, Default)]
pub(super) struct Answer {
    /// The agent's last text (a worker's: its answer, or why it has none).
    pub text: String,
    /// The turn's validated `final_output`.
    pub output: Option<Value>,
}

impl Answer {
    /// The texts a needle is looked for in: the final text and, when the
    /// run answered through `final_output`, that result as canonical JSON
    /// (keys sorted, no spaces: a key or a number is found as JSON writes
    /// it) and each string in it as written (a quote or a line break inside
    /// a value needs no JSON escaping in the needle).
    fn texts(&self) -> Vec<String> {
        let mut texts = vec![self.text.clone()];
        if let Some(output) = &self.output {
            if let Ok(json) = evoflux_core::hash::canonical_json(output) {
                texts.push(json);
            }
            strings(output, &mut texts);
        }
        texts
    }

    /// Whether `needle` is in one of [`texts`](Self::texts).
    pub fn contains(&self, needle: &str) -> bool {
        self.texts().iter().any(|t| t.contains(needle))
    }
}

/// Every string value in `value`, depth first.
fn strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer(text: &str, output: Option<Value>) -> Answer {
        Answer {
            text: text.into(),
            output,
        }
    }

    #[test]
    fn a_structured_answer_is_read_with_the_text() {
        let a = answer(
            "",
            Some(json!({"summary": "Added a CHANGELOG entry", "files": 1})),
        );
        assert!(a.contains("CHANGELOG"));
        assert!(a.contains(r#""files":1"#));
        assert!(a.contains(r#"{"files":1,"summary""#), "keys sorted");
        assert!(!a.contains("TODO"));
        let a = answer("done", Some(json!({"notes": ["say \"hi\"\nthen go"]})));
        assert!(a.contains("done"));
        assert!(a.contains("say \"hi\"\nthen go"), "a string as written");
        assert!(a.contains(r#"say \"hi\""#), "and as JSON writes it");
    }

    #[test]
    fn a_text_answer_is_its_text() {
        let a = answer("hello there", None);
        assert!(a.contains("hello"));
        assert!(!a.contains("null"));
    }
}
