//! Assembles tool calls from streamed deltas.
//!
//! Both wire protocols send a call as a head (index, id, name) followed by
//! argument fragments keyed by the same index, and several calls may
//! interleave. The assembler keeps one buffer per index and parses the
//! arguments once the call is complete.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::event::StreamEvent;
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

    /// Completes the call at `index`, if one is buffered: a
    /// [`StreamEvent::ToolCall`], or a [`StreamEvent::InvalidToolCall`]
    /// when its argument text is not JSON. A call without a name or id is
    /// a protocol error (`Err`).
    pub fn finish(&mut self, index: u32) -> Option<Result<StreamEvent, String>> {
        self.calls.remove(&index).map(|p| complete(index, p))
    }

    /// Whether no call is buffered.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// Completes every buffered call in index order.
    pub fn finish_all(&mut self) -> Vec<Result<StreamEvent, String>> {
        std::mem::take(&mut self.calls)
            .into_iter()
            .map(|(i, p)| complete(i, p))
            .collect()
    }
}

fn complete(index: u32, p: Partial) -> Result<StreamEvent, String> {
    if p.name.is_empty() {
        return Err(format!("tool call at index {index} has no name"));
    }
    if p.id.is_empty() {
        return Err(format!("tool call `{}` at index {index} has no id", p.name));
    }
    // A call without parameters may stream no argument text at all.
    if p.arguments.trim().is_empty() {
        return Ok(StreamEvent::ToolCall {
            call: ToolCall {
                id: p.id,
                name: p.name,
                arguments: Value::Object(serde_json::Map::new()),
            },
        });
    }
    Ok(match serde_json::from_str(&p.arguments) {
        Ok(arguments) => StreamEvent::ToolCall {
            call: ToolCall {
                id: p.id,
                name: p.name,
                arguments,
            },
        },
        Err(e) => StreamEvent::InvalidToolCall {
            call: ToolCall {
                id: p.id,
                name: p.name,
                arguments: Value::Object(serde_json::Map::new()),
            },
            raw_arguments: p.arguments,
            error: e.to_string(),
        },
    })
}

/// Assembles one complete call from its argument text, exactly as a wire
/// stream would: for providers that produce whole calls (the scripted one).
pub(crate) fn assemble_one(id: &str, name: &str, arguments: &str) -> StreamEvent {
    let mut a = ToolCallAssembler::default();
    a.push(0, Some(id), Some(name), arguments);
    let error = match a.finish(0) {
        Some(Ok(event)) => return event,
        Some(Err(error)) => error,
        None => "the call was not assembled".to_owned(),
    };
    // Only an empty id or name gets here; keep the call rather than lose it.
    StreamEvent::InvalidToolCall {
        call: ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments: Value::Object(serde_json::Map::new()),
        },
        raw_arguments: arguments.to_owned(),
        error,
    }
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
        let calls: Vec<_> = a
            .finish_all()
            .into_iter()
            .map(|e| match e.unwrap() {
                StreamEvent::ToolCall { call } => call,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(calls[0].arguments, json!({"path": "x"}));
        assert_eq!(calls[0].id, "a");
        assert_eq!(calls[1].name, "ls");
        assert!(a.finish_all().is_empty());
    }

    #[test]
    fn empty_arguments_are_an_object_and_bad_json_is_reported() {
        let mut a = ToolCallAssembler::default();
        a.push(0, Some("a"), Some("now"), "");
        assert!(matches!(
            a.finish(0).unwrap().unwrap(),
            StreamEvent::ToolCall { call } if call.arguments == json!({})
        ));
        a.push(0, Some("a"), Some("read"), "{\"path\"");
        match a.finish(0).unwrap().unwrap() {
            StreamEvent::InvalidToolCall {
                call,
                raw_arguments,
                error,
            } => {
                assert_eq!(call.name, "read");
                assert_eq!(call.arguments, json!({}));
                assert_eq!(raw_arguments, "{\"path\"");
                assert!(error.contains("EOF"), "{error}");
            }
            other => panic!("{other:?}"),
        }
        assert!(a.finish(0).is_none());
        a.push(0, None, Some("read"), "{}");
        assert!(
            a.finish(0).unwrap().is_err(),
            "a call without an id is a protocol error"
        );
    }
}
