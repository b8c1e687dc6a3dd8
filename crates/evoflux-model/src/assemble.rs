//! Assembles tool calls from streamed deltas.
//!
//! Both wire protocols send a call as a head (index, id, name) followed by
//! argument fragments keyed by the same index, and several calls may
//! interleave. The assembler keeps one buffer per index and parses the
//! arguments once the call is complete.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::message::ToolCall;

#[derive(Debug, Default)]
struct Partial {
    id: String,
    name: String,
    arguments: String,
}

/// Per-response buffers of tool calls, keyed by their stream index.
#[derive(Debug, Default)]
pub(crate) struct ToolCallAssembler {
    calls: BTreeMap<u32, Partial>,
}

impl ToolCallAssembler {
    /// Adds one fragment. Id and name are set by the first fragment that
    /// carries them; argument text is appended.
    pub fn push(&mut self, index: u32, id: Option<&str>, name: Option<&str>, arguments: &str) {
        let call = self.calls.entry(index).or_default();
        if let Some(id) = id.filter(|s| !s.is_empty())
            && call.id.is_empty()
        {
            id.clone_into(&mut call.id);
        }
        if let Some(name) = name.filter(|s| !s.is_empty())
            && call.name.is_empty()
        {
            name.clone_into(&mut call.name);
        }
        call.arguments.push_str(arguments);
    }

    /// Completes the call at `index`, if one is buffered.
    pub fn finish(&mut self, index: u32) -> Option<Result<ToolCall, String>> {
        self.calls.remove(&index).map(|p| complete(index, p))
    }

    /// Completes every buffered call in index order.
    pub fn finish_all(&mut self) -> Vec<Result<ToolCall, String>> {
        std::mem::take(&mut self.calls)
            .into_iter()
            .map(|(i, p)| complete(i, p))
            .collect()
    }
}

fn complete(index: u32, p: Partial) -> Result<ToolCall, String> {
    if p.name.is_empty() {
        return Err(format!("tool call at index {index} has no name"));
    }
    if p.id.is_empty() {
        return Err(format!("tool call `{}` at index {index} has no id", p.name));
    }
    // A call without parameters may stream no argument text at all.
    let arguments = if p.arguments.trim().is_empty() {
        Value::Object(serde_json::Map::new())
    } else {
        serde_json::from_str(&p.arguments).map_err(|e| {
            format!(
                "tool call `{}` ({}) has arguments that are not JSON ({e}): {}",
                p.name, p.id, p.arguments
            )
        })?
    };
    Ok(ToolCall {
        id: p.id,
        name: p.name,
        arguments,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn interleaved_calls_assemble_by_index() {
        let mut a = ToolCallAssembler::default();
        a.push(1, Some("b"), Some("ls"), "");
        a.push(0, Some("a"), Some("read"), "{\"pa");
        a.push(1, None, None, "{}");
        a.push(0, None, None, "th\": \"x\"}");
        let calls: Vec<_> = a.finish_all().into_iter().map(Result::unwrap).collect();
        assert_eq!(calls[0].arguments, json!({"path": "x"}));
        assert_eq!(calls[0].id, "a");
        assert_eq!(calls[1].name, "ls");
        assert!(a.finish_all().is_empty());
    }

    #[test]
    fn empty_arguments_are_an_object_and_bad_json_is_reported() {
        let mut a = ToolCallAssembler::default();
        a.push(0, Some("a"), Some("now"), "");
        assert_eq!(a.finish(0).unwrap().unwrap().arguments, json!({}));
        a.push(0, Some("a"), Some("read"), "{\"path\"");
        let err = a.finish(0).unwrap().unwrap_err();
        assert!(err.contains("read"), "{err}");
        assert!(a.finish(0).is_none());
    }
}
