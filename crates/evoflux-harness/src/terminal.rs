//! `final_output`: the one per-turn native tool.
//!
//! It exists only for a turn that asks for a structured result, and this
//! module alone owns its model-visible name and the extraction of the
//! result. A schema that is not an object schema is wrapped as
//! `{"result": <schema>}` because tool arguments are always objects; the
//! wrapper is removed again on extraction.

use serde_json::{Value, json};

/// The model-visible name of the terminal tool.
pub const FINAL_OUTPUT: &str = "final_output";

/// Why an output schema cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("the output schema is not a valid JSON Schema: {message}")]
pub struct SchemaError {
    pub message: String,
}

/// The terminal output contract of one turn.
#[derive(Debug)]
pub struct TerminalOutput {
    schema: Value,
    parameters: Value,
    wrapped: bool,
    validator: jsonschema::Validator,
}

impl TerminalOutput {
    pub fn new(schema: Value) -> Result<TerminalOutput, SchemaError> {
        let validator = jsonschema::validator_for(&schema).map_err(|e| SchemaError {
            message: e.to_string(),
        })?;
        let is_object = schema.get("type").and_then(Value::as_str) == Some("object");
        let parameters = if is_object {
            schema.clone()
        } else {
            json!({
                "type": "object",
                "properties": {"result": schema.clone()},
                "required": ["result"],
                "additionalProperties": false,
            })
        };
        Ok(TerminalOutput {
            schema,
            parameters,
            wrapped: !is_object,
            validator,
        })
    }

    /// The schema as given, for persisting with a waiting turn.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    pub fn tool_definition(&self) -> evoflux_model::ToolDefinition {
        evoflux_model::ToolDefinition {
            name: FINAL_OUTPUT.to_owned(),
            description: "Finish the turn with its structured result. Call it exactly once, \
                          when the work is done, with arguments that match this schema."
                .to_owned(),
            parameters: self.parameters.clone(),
        }
    }

    /// Extracts and validates the result from the call's arguments. The
    /// error lists what is wrong, for the model to correct.
    pub fn extract(&self, arguments: &Value) -> Result<Value, String> {
        let value = if self.wrapped {
            match arguments.get("result") {
                Some(v) => v.clone(),
                None => return Err("missing `result`: pass the result as {\"result\": …}".into()),
            }
        } else {
            arguments.clone()
        };
        let errors = crate::schema_errors::schema_errors(&self.validator, &value, 8);
        if errors.is_empty() {
            Ok(value)
        } else {
            Err(format!(
                "the result does not match the output schema: {}. Call {FINAL_OUTPUT} again with a corrected result.",
                errors.join("; ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_schemas_are_used_as_parameters() {
        let t = TerminalOutput::new(json!({
            "type": "object",
            "properties": {"count": {"type": "integer"}},
            "required": ["count"]
        }))
        .unwrap();
        assert_eq!(t.tool_definition().parameters["required"], json!(["count"]));
        assert_eq!(
            t.extract(&json!({"count": 3})).unwrap(),
            json!({"count": 3})
        );
        let err = t.extract(&json!({"count": "three"})).unwrap_err();
        assert!(err.contains("/count"), "{err}");
    }

    #[test]
    fn other_schemas_are_wrapped_and_unwrapped() {
        let t = TerminalOutput::new(json!({"type": "array", "items": {"type": "string"}})).unwrap();
        assert_eq!(
            t.tool_definition().parameters["properties"]["result"]["type"],
            "array"
        );
        assert_eq!(t.extract(&json!({"result": ["a"]})).unwrap(), json!(["a"]));
        assert!(t.extract(&json!({"result": [1]})).is_err());
        assert!(t.extract(&json!({})).is_err());
    }

    #[test]
    fn invalid_schemas_are_refused() {
        assert!(TerminalOutput::new(json!({"type": "no-such-type"})).is_err());
    }
}
