//! `todo`: the lead's task list for the session, and the tool's handler.
//! Its definition is [`evoflux_graph::tool::builtin::todo`].
//!
//! The list is part of the conversation: each successful call is in the
//! durable transcript, so the current list is rebuilt on resume by
//! replaying those calls, and no second store can drift from what the
//! model saw.

use evoflux_model::ToolCall;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{BuiltinState, BuiltinTool, Handled};
use crate::events::ToolResult;
use crate::session::Harness;

#[derive(Debug)]
pub(super) struct Todo;

impl BuiltinTool for Todo {
    fn execute<'a>(
        &'a self,
        session: &'a mut Harness,
        call: &'a ToolCall,
    ) -> Handled<'a, ToolResult> {
        Box::pin(async move { Ok(session.todo_mut().apply(&call.arguments)) })
    }

    fn replay(&self, call: &ToolCall, state: &mut BuiltinState) {
        state.todo.apply(&call.arguments);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
    Cancelled,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TodoItem {
    pub content: String,
    pub status: TodoStatus,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TodoInput {
    #[serde(default)]
    todos: Option<Vec<TodoItem>>,
}

/// The session's task list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TodoList {
    items: Vec<TodoItem>,
}

impl TodoList {
    pub fn items(&self) -> &[TodoItem] {
        &self.items
    }

    /// Reads (no `todos`) or replaces the list.
    pub fn apply(&mut self, input: &Value) -> ToolResult {
        let parsed: TodoInput = match serde_json::from_value(input.clone()) {
            Ok(p) => p,
            Err(e) => return ToolResult::error(format!("invalid todo input: {e}")),
        };
        if let Some(todos) = parsed.todos {
            if let Some(empty) = todos.iter().position(|t| t.content.trim().is_empty()) {
                return ToolResult::error(format!("todos[{empty}].content is empty"));
            }
            self.items = todos;
        }
        ToolResult::ok(self.render())
    }

    fn render(&self) -> String {
        if self.items.is_empty() {
            return "The task list is empty.".to_owned();
        }
        let count = |s: TodoStatus| self.items.iter().filter(|t| t.status == s).count();
        let mut out = format!(
            "{} tasks: {} pending, {} in progress, {} completed, {} cancelled\n",
            self.items.len(),
            count(TodoStatus::Pending),
            count(TodoStatus::InProgress),
            count(TodoStatus::Completed),
            count(TodoStatus::Cancelled),
        );
        for t in &self.items {
            let mark = match t.status {
                TodoStatus::Pending => "[ ]",
                TodoStatus::InProgress => "[~]",
                TodoStatus::Completed => "[x]",
                TodoStatus::Cancelled => "[-]",
            };
            out.push_str(&format!("{mark} {}\n", t.content));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn replaces_and_reads_the_list() {
        let mut list = TodoList::default();
        assert_eq!(list.apply(&json!({})).content, "The task list is empty.");
        let r = list.apply(&json!({"todos": [
            {"content": "read the code", "status": "completed"},
            {"content": "fix the bug", "status": "in_progress"}
        ]}));
        assert!(!r.is_error);
        assert!(r.content.contains("[x] read the code"));
        assert!(r.content.contains("[~] fix the bug"));
        assert_eq!(list.items().len(), 2);
        let again = list.apply(&json!({}));
        assert_eq!(again.content, r.content);
    }

    #[test]
    fn bad_input_leaves_the_list_alone() {
        let mut list = TodoList::default();
        list.apply(&json!({"todos": [{"content": "a", "status": "pending"}]}));
        assert!(
            list.apply(&json!({"todos": [{"content": "b", "status": "later"}]}))
                .is_error
        );
        assert!(
            list.apply(&json!({"todos": [{"content": " ", "status": "pending"}]}))
                .is_error
        );
        assert_eq!(list.items()[0].content, "a");
    }
}
