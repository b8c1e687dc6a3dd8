//! Finding the JSON object in a worker's final text.
//!
//! Small models wrap JSON in prose or code fences; a result is accepted if
//! any of three candidates, in order, parses to an object: the whole
//! trimmed text, the body of the first fenced block, the slice from the
//! first `{` to the last `}`.

use serde_json::{Map, Value};

/// Why no object was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ExtractError {
    #[error("missing final result")]
    Missing,
    #[error("result must be valid JSON")]
    NotJson,
    #[error("result must be a JSON object")]
    NotObject,
}

/// The body of the first fenced block (any info string).
pub fn first_fenced_block(text: &str) -> Option<&str> {
    let start = text.find("```")?;
    let after = &text[start + 3..];
    let body_start = after.find('\n')? + 1;
    let body = &after[body_start..];
    let end = body.find("```")?;
    Some(&body[..end])
}

/// Extracts the result object from `output`.
pub fn extract_json_object(output: Option<&str>) -> Result<Map<String, Value>, ExtractError> {
    let text = match output {
        Some(t) if !t.trim().is_empty() => t.trim(),
        _ => return Err(ExtractError::Missing),
    };
    let mut candidates = vec![text];
    if let Some(f) = first_fenced_block(text) {
        candidates.push(f.trim());
    }
    if let (Some(a), Some(b)) = (text.find('{'), text.rfind('}'))
        && a < b
    {
        candidates.push(&text[a..=b]);
    }
    let mut parsed_any = false;
    for c in candidates {
        match serde_json::from_str::<Value>(c) {
            Ok(Value::Object(m)) => return Ok(m),
            Ok(_) => parsed_any = true,
            Err(_) => {}
        }
    }
    Err(if parsed_any {
        ExtractError::NotObject
    } else {
        ExtractError::NotJson
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_in_order() {
        assert!(extract_json_object(Some(r#"{"a":1}"#)).is_ok());
        assert!(extract_json_object(Some("Here:\n```json\n{\"a\":1}\n```\nbye")).is_ok());
        assert!(extract_json_object(Some("I found {\"a\": {\"b\": 2}} there")).is_ok());
        assert_eq!(extract_json_object(None), Err(ExtractError::Missing));
        assert_eq!(extract_json_object(Some("  ")), Err(ExtractError::Missing));
        assert_eq!(
            extract_json_object(Some("no json here")),
            Err(ExtractError::NotJson)
        );
        assert_eq!(
            extract_json_object(Some("```json\n[1,2]\n```"))
                .unwrap_err()
                .to_string(),
            "result must be a JSON object"
        );
    }
}
