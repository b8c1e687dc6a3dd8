//! Field-by-field parsing of a tool's JSON input. Done by hand rather
//! than through serde so that every error names the offending field,
//! which is what the model needs to fix its call.

use serde_json::{Map, Value};

use crate::error::ToolError;

/// The input object of one call, consumed field by field.
#[derive(Debug)]
pub(crate) struct Args<'a> {
    map: &'a Map<String, Value>,
    known: &'static [&'static str],
}

impl<'a> Args<'a> {
    /// Checks that the input is an object whose fields are all in `known`.
    pub(crate) fn new(
        input: &'a Value,
        known: &'static [&'static str],
    ) -> Result<Args<'a>, ToolError> {
        let map = input
            .as_object()
            .ok_or_else(|| ToolError::input("(input)", "the input must be a JSON object"))?;
        if let Some(unknown) = map.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(ToolError::input(
                unknown,
                format!("unknown field; expected one of {}", known.join(", ")),
            ));
        }
        Ok(Args { map, known })
    }

    fn present(&self, field: &str) -> Option<&'a Value> {
        debug_assert!(self.known.contains(&field));
        self.map.get(field).filter(|v| !v.is_null())
    }

    pub(crate) fn string(&self, field: &str) -> Result<String, ToolError> {
        self.opt_string(field)?
            .ok_or_else(|| ToolError::input(field, "required string is missing"))
    }

    pub(crate) fn opt_string(&self, field: &str) -> Result<Option<String>, ToolError> {
        match self.present(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(ToolError::input(
                field,
                format!("expected a string, got {}", kind(other)),
            )),
        }
    }

    pub(crate) fn opt_bool(&self, field: &str) -> Result<Option<bool>, ToolError> {
        match self.present(field) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(ToolError::input(
                field,
                format!("expected a boolean, got {}", kind(other)),
            )),
        }
    }

    /// An optional integer within `min..=max`.
    pub(crate) fn opt_uint(
        &self,
        field: &str,
        min: u64,
        max: u64,
    ) -> Result<Option<usize>, ToolError> {
        let Some(value) = self.present(field) else {
            return Ok(None);
        };
        let n = value.as_u64().ok_or_else(|| {
            ToolError::input(
                field,
                format!("expected a non-negative integer, got {value}"),
            )
        })?;
        if n < min || n > max {
            return Err(ToolError::input(
                field,
                format!("{n} is out of range {min}..={max}"),
            ));
        }
        usize::try_from(n)
            .map(Some)
            .map_err(|_| ToolError::input(field, format!("{n} is too large")))
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
