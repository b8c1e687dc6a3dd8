//! What a request asks the model to read, independent of its wire: the
//! prompt as an ordered list of canonical blocks (the unit a prefix cache
//! can end on), plus the few facts the fake server needs to pick its
//! answer (is this the skill resolver, which conversation step is it).
//!
//! The canonical bytes of a block are its compact JSON with any
//! `cache_control` marker removed: a marker tells the provider where to
//! cache, it is not part of the text the model reads, so moving a
//! breakpoint from one message to the next must not change the prefix.

use serde_json::Value;

use crate::Wire;

/// The opening sentence of evoflux's skill-resolver system prompt
/// (`RESOLVER_SYSTEM_PROMPT` in evoflux-skills). Duplicated on purpose:
/// this crate does not link evoflux, and a changed prompt should show up
/// here as resolver calls being answered as main calls.
pub const RESOLVER_PROMPT_START: &str = "You are the skill-resolution stage of an agent harness.";

/// One unit of the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub bytes: Vec<u8>,
    /// The request put a `cache_control` breakpoint on this block
    /// (Anthropic only).
    pub breakpoint: bool,
}

/// A request's prompt, normalized.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prompt {
    /// In the order the provider reads them: system and tools first (in
    /// the wire's documented order), then the conversation.
    pub blocks: Vec<Block>,
    /// The system prompt's text, joined.
    pub system: String,
    pub tool_count: usize,
    /// Model turns already in the conversation: which step of the script
    /// this request is at.
    pub assistant_turns: usize,
    /// Tool results in the conversation.
    pub tool_results: usize,
}

impl Prompt {
    /// Normalizes the JSON body of a request on `wire`.
    pub fn parse(wire: Wire, body: &Value) -> Result<Prompt, String> {
        match wire {
            Wire::Chat => parse_chat(body),
            Wire::Responses => parse_responses(body),
            Wire::Anthropic => parse_anthropic(body),
        }
    }

    /// The whole prompt as one byte string, block after block.
    pub fn canonical(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.blocks.iter().map(|b| b.bytes.len()).sum());
        for b in &self.blocks {
            out.extend_from_slice(&b.bytes);
        }
        out
    }

    /// The skill resolver's call: no tools, and the resolver's system
    /// prompt.
    pub fn is_resolver(&self) -> bool {
        self.tool_count == 0 && self.system.trim_start().starts_with(RESOLVER_PROMPT_START)
    }
}

/// A block of `value` without its `cache_control`, and whether it had one.
fn block(prefix: &str, value: &Value) -> Block {
    let mut v = value.clone();
    let breakpoint = v
        .as_object_mut()
        .and_then(|o| o.remove("cache_control"))
        .is_some_and(|c| !c.is_null());
    let mut bytes = prefix.as_bytes().to_vec();
    bytes.extend_from_slice(v.to_string().as_bytes());
    Block { bytes, breakpoint }
}

/// The text of a `content` that is a string or a list of text parts.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn is_system_role(m: &Value) -> bool {
    matches!(
        m.get("role").and_then(Value::as_str),
        Some("system" | "developer")
    )
}

fn role_is(m: &Value, role: &str) -> bool {
    m.get("role").and_then(Value::as_str) == Some(role)
}

fn tools(body: &Value) -> Vec<Block> {
    body.get("tools")
        .and_then(Value::as_array)
        .map(|t| t.iter().map(|t| block("tool:", t)).collect())
        .unwrap_or_default()
}

/// Chat Completions: leading system (or developer) messages, the tools,
/// then every other message, one block each.
fn parse_chat(body: &Value) -> Result<Prompt, String> {
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("a chat completions request without `messages`")?;
    let lead = messages.iter().take_while(|m| is_system_role(m)).count();
    let (system, rest) = messages.split_at(lead);
    let tools = tools(body);
    let mut p = Prompt {
        system: system
            .iter()
            .map(|m| text_of(&m["content"]))
            .collect::<Vec<_>>()
            .join("\n"),
        tool_count: tools.len(),
        assistant_turns: rest.iter().filter(|m| role_is(m, "assistant")).count(),
        tool_results: rest.iter().filter(|m| role_is(m, "tool")).count(),
        ..Prompt::default()
    };
    p.blocks.extend(system.iter().map(|m| block("", m)));
    p.blocks.extend(tools);
    p.blocks.extend(rest.iter().map(|m| block("", m)));
    Ok(p)
}

/// Items the model produced: one run of them is one assistant turn.
fn is_model_item(item: &Value) -> bool {
    match item.get("type").and_then(Value::as_str) {
        Some("function_call" | "reasoning" | "web_search_call" | "custom_tool_call") => true,
        Some("message") | None => role_is(item, "assistant"),
        Some(_) => false,
    }
}

/// Responses: `instructions` and leading system items, the tools, then
/// every other input item. Consecutive model items (function calls,
/// reasoning, assistant text) are one assistant turn.
fn parse_responses(body: &Value) -> Result<Prompt, String> {
    let input: Vec<Value> = match body.get("input") {
        Some(Value::String(s)) => vec![serde_json::json!({"role": "user", "content": s})],
        Some(Value::Array(items)) => items.clone(),
        _ => return Err("a responses request without `input`".to_owned()),
    };
    let lead = input.iter().take_while(|m| is_system_role(m)).count();
    let (system, rest) = input.split_at(lead);
    let mut texts = Vec::new();
    let mut p = Prompt::default();
    if let Some(instructions) = body.get("instructions").filter(|i| !i.is_null()) {
        texts.push(text_of(instructions));
        p.blocks.push(block("instructions:", instructions));
    }
    texts.extend(system.iter().map(|m| text_of(&m["content"])));
    p.system = texts.join("\n");
    p.blocks.extend(system.iter().map(|m| block("", m)));
    let tools = tools(body);
    p.tool_count = tools.len();
    p.blocks.extend(tools);
    let mut previous_was_model = false;
    for item in rest {
        let model = is_model_item(item);
        if model && !previous_was_model {
            p.assistant_turns += 1;
        }
        previous_was_model = model;
        if item.get("type").and_then(Value::as_str) == Some("function_call_output") {
            p.tool_results += 1;
        }
        p.blocks.push(block("", item));
    }
    Ok(p)
}

/// Anthropic Messages, in the order the API defines its cache prefix:
/// tools, then `system`, then the messages, one block per tool, system
/// block and content block, each carrying its own breakpoint.
fn parse_anthropic(body: &Value) -> Result<Prompt, String> {
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("a messages request without `messages`")?;
    let mut p = Prompt::default();
    let tools = tools(body);
    p.tool_count = tools.len();
    p.blocks.extend(tools);
    match body.get("system") {
        Some(Value::String(s)) => {
            p.system = s.clone();
            p.blocks.push(block("system:", &Value::String(s.clone())));
        }
        Some(Value::Array(parts)) => {
            p.system = text_of(&Value::Array(parts.clone()));
            p.blocks.extend(parts.iter().map(|b| block("system:", b)));
        }
        _ => {}
    }
    for m in messages {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
        if role == "assistant" {
            p.assistant_turns += 1;
        }
        let prefix = format!("{role}:");
        match m.get("content") {
            Some(Value::Array(blocks)) => {
                for (i, b) in blocks.iter().enumerate() {
                    if b.get("type").and_then(Value::as_str) == Some("tool_result") {
                        p.tool_results += 1;
                    }
                    p.blocks.push(block(if i == 0 { &prefix } else { "" }, b));
                }
            }
            Some(other) => p.blocks.push(block(&prefix, other)),
            None => {}
        }
    }
    Ok(p)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn chat_steps_count_assistant_turns_and_tool_results() {
        let body = json!({
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "read", "arguments": "{}"}},
                    {"id": "b", "type": "function", "function": {"name": "read", "arguments": "{}"}}
                ]},
                {"role": "tool", "tool_call_id": "a", "content": "x"},
                {"role": "tool", "tool_call_id": "b", "content": "y"}
            ],
            "tools": [{"type": "function", "function": {"name": "read"}}]
        });
        let p = Prompt::parse(Wire::Chat, &body).unwrap();
        assert_eq!(p.assistant_turns, 1);
        assert_eq!(p.tool_results, 2);
        assert_eq!(p.tool_count, 1);
        assert_eq!(p.system, "be brief");
        // system, tool, then four conversation messages
        assert_eq!(p.blocks.len(), 6);
        assert!(p.blocks[1].bytes.starts_with(b"tool:"));
        assert!(!p.is_resolver());
    }

    #[test]
    fn responses_group_consecutive_model_items_into_one_turn() {
        let body = json!({
            "instructions": "be brief",
            "input": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
                {"type": "reasoning", "id": "r1", "summary": []},
                {"type": "function_call", "call_id": "a", "name": "read", "arguments": "{}"},
                {"type": "function_call", "call_id": "b", "name": "read", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "a", "output": "x"},
                {"type": "function_call_output", "call_id": "b", "output": "y"},
                {"type": "function_call", "call_id": "c", "name": "ls", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c", "output": "z"}
            ],
            "tools": [{"type": "function", "name": "read"}, {"type": "function", "name": "ls"}]
        });
        let p = Prompt::parse(Wire::Responses, &body).unwrap();
        assert_eq!(p.assistant_turns, 2);
        assert_eq!(p.tool_results, 3);
        assert_eq!(p.tool_count, 2);
        assert_eq!(p.system, "be brief");
        assert_eq!(p.blocks.len(), 1 + 2 + 8);
    }

    #[test]
    fn anthropic_breakpoints_are_kept_per_block_and_cut_from_the_bytes() {
        let marked = json!({
            "system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "go", "cache_control": {"type": "ephemeral"}}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "read", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]}
            ],
            "tools": [{"name": "read", "input_schema": {}}]
        });
        let p = Prompt::parse(Wire::Anthropic, &marked).unwrap();
        let marks: Vec<bool> = p.blocks.iter().map(|b| b.breakpoint).collect();
        assert_eq!(marks, [false, true, true, false, false]);
        assert_eq!((p.assistant_turns, p.tool_results), (1, 1));
        // The same prompt without markers reads the same bytes.
        let mut plain = marked.clone();
        plain["system"][0]
            .as_object_mut()
            .unwrap()
            .remove("cache_control");
        plain["messages"][0]["content"][0]
            .as_object_mut()
            .unwrap()
            .remove("cache_control");
        let q = Prompt::parse(Wire::Anthropic, &plain).unwrap();
        assert_eq!(p.canonical(), q.canonical());
        assert!(q.blocks.iter().all(|b| !b.breakpoint));
    }

    #[test]
    fn the_resolver_is_recognised_on_every_wire() {
        let system = format!("{RESOLVER_PROMPT_START} You receive one JSON object.");
        let chat = json!({"messages": [{"role": "system", "content": system}, {"role": "user", "content": "{}"}]});
        assert!(Prompt::parse(Wire::Chat, &chat).unwrap().is_resolver());
        let responses =
            json!({"instructions": system, "input": [{"role": "user", "content": "{}"}]});
        assert!(
            Prompt::parse(Wire::Responses, &responses)
                .unwrap()
                .is_resolver()
        );
        let anthropic = json!({"system": [{"type": "text", "text": system}], "messages": [{"role": "user", "content": "{}"}]});
        assert!(
            Prompt::parse(Wire::Anthropic, &anthropic)
                .unwrap()
                .is_resolver()
        );
        // The same system prompt with tools is a main call.
        let mut with_tools = chat.clone();
        with_tools["tools"] = json!([{"type": "function", "function": {"name": "read"}}]);
        assert!(
            !Prompt::parse(Wire::Chat, &with_tools)
                .unwrap()
                .is_resolver()
        );
    }
}
