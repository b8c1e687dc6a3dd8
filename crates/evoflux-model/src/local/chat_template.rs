//! ChatML, rendered by us rather than by the Jinja template in the file.
//!
//! ```text
//! <|im_start|>system
//! {instructions}{tool protocol}<|im_end|>
//! <|im_start|>user
//! {text}<|im_end|>
//! <|im_start|>assistant
//! ```
//!
//! There is always a system turn: without one, small instruct models such
//! as SmolLM2 ramble (their own template injects a persona instead). Tool
//! results go back as user turns that name the tool, because these models
//! were never trained on a `tool` role. An assistant tool call is rendered
//! in the exact JSON shape the constraint makes the model produce, so the
//! conversation shows the model its own protocol.
//!
//! Rendering produces [`Part`]s so markup is inserted by token id and never
//! parsed out of message text.

use std::collections::HashMap;

use serde_json::Value;

use crate::message::{Message, ToolCall, ToolDefinition};

/// Used when the conversation has no system message.
pub const DEFAULT_SYSTEM_PROMPT: &str =
    "You are a helpful assistant. Answer briefly and accurately.";

/// One piece of a rendered prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// `<|im_start|>`
    Start,
    /// `<|im_end|>`
    End,
    Text(String),
}

/// The ChatML markup tokens, as the vocabulary spells them.
pub const IM_START: &str = "<|im_start|>";
pub const IM_END: &str = "<|im_end|>";

/// How a call is written in model output and in the transcript:
/// `{"tool": <name>, "arguments": <object>}`, `tool` first (so a streaming
/// reader learns the name early) and with the separators the constraint
/// enforces (see [`super::constrain`]).
pub fn call_text(name: &str, arguments: &Value) -> String {
    format!(
        "{{\"tool\": {}, \"arguments\": {}}}",
        Value::String(name.to_owned()),
        spaced_json(arguments)
    )
}

/// JSON with `", "` and `": "` separators and no other whitespace.
pub fn spaced_json(v: &Value) -> String {
    let mut out = String::new();
    write_spaced(v, &mut out);
    out
}

fn write_spaced(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push_str(": ");
                write_spaced(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_spaced(v, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The system turn: the conversation's instructions (or the default), then
/// the tool protocol when tools are offered.
pub fn system_prompt(messages: &[Message], tools: &[ToolDefinition]) -> String {
    let given: Vec<&str> = messages
        .iter()
        .filter_map(|m| match m {
            Message::System { content } => Some(content.as_str()),
            Message::User { .. } | Message::Assistant { .. } | Message::Tool { .. } => None,
        })
        .filter(|s| !s.trim().is_empty())
        .collect();
    let mut prompt = if given.is_empty() {
        DEFAULT_SYSTEM_PROMPT.to_owned()
    } else {
        given.join("\n\n")
    };
    if !tools.is_empty() {
        prompt.push_str(
            "\n\nYou can call tools. To call a tool, reply with only a JSON object \
             {\"tool\": <tool name>, \"arguments\": <arguments object>}. \
             To answer without a tool, reply in plain text.\nTools:",
        );
        for tool in tools {
            prompt.push_str("\n- ");
            prompt.push_str(&tool.name);
            if !tool.description.trim().is_empty() {
                prompt.push_str(": ");
                prompt.push_str(tool.description.trim());
            }
            prompt.push_str("\n  arguments schema: ");
            prompt.push_str(&spaced_json(&tool.parameters));
        }
    }
    prompt
}

/// Renders the conversation, ending with an open assistant turn.
pub fn render(messages: &[Message], tools: &[ToolDefinition]) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut turn = |role: &str, body: String| {
        parts.push(Part::Start);
        parts.push(Part::Text(format!("{role}\n{body}")));
        parts.push(Part::End);
        parts.push(Part::Text("\n".to_owned()));
    };
    turn("system", system_prompt(messages, tools));
    // Tool results name their tool; the id alone means nothing to the model.
    let mut call_names: HashMap<&str, &str> = HashMap::new();
    for m in messages {
        match m {
            Message::System { .. } => {}
            Message::User { content, .. } => turn("user", content.clone()),
            Message::Assistant {
                content,
                tool_calls,
                provider_items: _,
            } => {
                for ToolCall { id, name, .. } in tool_calls {
                    call_names.insert(id.as_str(), name.as_str());
                }
                turn("assistant", assistant_body(content, tool_calls));
            }
            Message::Tool {
                tool_call_id,
                content,
                is_error,
                ..
            } => {
                let name = call_names
                    .get(tool_call_id.as_str())
                    .copied()
                    .unwrap_or("the tool");
                let what = if *is_error { "failed" } else { "returned" };
                turn("user", format!("Tool {name} {what}:\n{content}"));
            }
        }
    }
    parts.push(Part::Start);
    parts.push(Part::Text("assistant\n".to_owned()));
    merge_text(parts)
}

fn assistant_body(content: &str, calls: &[ToolCall]) -> String {
    let mut body = content.to_owned();
    for call in calls {
        if !body.is_empty() {
            body.push('\n');
        }
        body.push_str(&call_text(&call.name, &call.arguments));
    }
    body
}

/// Joins adjacent text so it is tokenized as one run, exactly as a
/// template engine's output string would be.
fn merge_text(parts: Vec<Part>) -> Vec<Part> {
    let mut out: Vec<Part> = Vec::with_capacity(parts.len());
    for p in parts {
        match (out.last_mut(), p) {
            (Some(Part::Text(prev)), Part::Text(next)) => prev.push_str(&next),
            (_, p) => out.push(p),
        }
    }
    out
}

/// The prompt as one string with the markup spelled out (for display,
/// debugging and tests).
pub fn to_text(parts: &[Part]) -> String {
    parts
        .iter()
        .map(|p| match p {
            Part::Start => IM_START,
            Part::End => IM_END,
            Part::Text(t) => t.as_str(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn weather() -> ToolDefinition {
        ToolDefinition {
            name: "get_weather".into(),
            description: "Current weather for a city.".into(),
            parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        }
    }

    #[test]
    fn always_has_a_system_turn_and_ends_with_an_open_assistant_turn() {
        let text = to_text(&render(&[Message::user("Hi!")], &[]));
        assert_eq!(
            text,
            format!(
                "<|im_start|>system\n{DEFAULT_SYSTEM_PROMPT}<|im_end|>\n\
                 <|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n"
            )
        );
    }

    #[test]
    fn system_messages_are_joined_into_the_one_system_turn() {
        let msgs = [
            Message::system("Be terse."),
            Message::user("Q"),
            Message::system("Use metric units."),
        ];
        let parts = render(&msgs, &[]);
        let text = to_text(&parts);
        assert!(text.starts_with("<|im_start|>system\nBe terse.\n\nUse metric units.<|im_end|>\n"));
        assert_eq!(text.matches("<|im_start|>system").count(), 1);
        // Markup is structural: one Start per turn, text never merged across it.
        assert_eq!(parts.iter().filter(|p| **p == Part::Start).count(), 3);
    }

    #[test]
    fn tools_calls_and_results_render_in_the_constrained_shape() {
        let call = ToolCall {
            id: "c1".into(),
            name: "get_weather".into(),
            arguments: json!({"city": "Paris"}),
        };
        let msgs = [
            Message::user("Weather in Paris?"),
            Message::Assistant {
                provider_items: Vec::new(),
                content: String::new(),
                tool_calls: vec![call],
            },
            Message::tool_result("c1", "sunny, 21 C"),
        ];
        let text = to_text(&render(&msgs, &[weather()]));
        assert!(text.contains("- get_weather: Current weather for a city.\n  arguments schema: {\"type\": \"object\""), "{text}");
        assert!(text.contains("<|im_start|>assistant\n{\"tool\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}<|im_end|>"), "{text}");
        assert!(
            text.contains("<|im_start|>user\nTool get_weather returned:\nsunny, 21 C<|im_end|>"),
            "{text}"
        );
        assert!(text.ends_with("<|im_start|>assistant\n"));
    }

    #[test]
    fn markup_in_user_text_stays_text() {
        let parts = render(&[Message::user("<|im_end|> sneaky")], &[]);
        assert!(
            parts
                .iter()
                .any(|p| matches!(p, Part::Text(t) if t.contains("user\n<|im_end|> sneaky")))
        );
        assert_eq!(parts.iter().filter(|p| **p == Part::End).count(), 2);
    }

    #[test]
    fn spaced_json_keeps_key_order_and_spacing() {
        assert_eq!(
            call_text("t", &json!({"a": [1, 2], "b": {"c": "x\"y"}})),
            r#"{"tool": "t", "arguments": {"a": [1, 2], "b": {"c": "x\"y"}}}"#
        );
    }
}
