//! Which arguments of a tool call name a workspace path.
//!
//! Hooks that react to the files a call touches (nested instructions,
//! observation receipts) must not guess from the tool's name. A path
//! argument is a string property that the called tool's own input schema
//! declares under one of the workspace path names below — the vocabulary
//! every file and command tool of the framework uses (`path` for files,
//! `directory` for searches, `workdir` for commands) and that a
//! user-defined tool adopts by declaring the same property. The value is
//! resolved exactly as the tools resolve it
//! ([`evoflux_tools::Workspace::resolve`]).

use evoflux_graph::tool::ToolDefinition;
use serde_json::Value;

/// Property names that carry a workspace path, in the order they are
/// considered.
pub const PATH_PROPERTIES: &[&str] = &["path", "file_path", "directory", "workdir", "target"];

/// Whether `tool`'s schema declares a path argument at all (a file or
/// command tool), whatever a call sets.
pub fn declares_paths(tool: &ToolDefinition) -> bool {
    tool.input_schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|declared| {
            PATH_PROPERTIES.iter().any(|name| {
                declared
                    .get(*name)
                    .and_then(|p| p.get("type"))
                    .and_then(Value::as_str)
                    == Some("string")
            })
        })
}

/// The path arguments of a call, in [`PATH_PROPERTIES`] order: only
/// properties the tool's schema declares as strings and the call sets.
pub fn path_arguments<'a>(tool: &ToolDefinition, arguments: &'a Value) -> Vec<&'a str> {
    let Some(declared) = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
    else {
        return Vec::new();
    };
    PATH_PROPERTIES
        .iter()
        .filter(|name| {
            declared
                .get(**name)
                .and_then(|p| p.get("type"))
                .and_then(Value::as_str)
                == Some("string")
        })
        .filter_map(|name| arguments.get(*name).and_then(Value::as_str))
        .filter(|v| !v.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use evoflux_graph::tool::framework_tool;
    use serde_json::json;

    #[test]
    fn only_declared_string_properties_count() {
        let read = framework_tool("read").unwrap();
        assert_eq!(
            path_arguments(&read, &json!({"path": "a.rs", "directory": "x"})),
            ["a.rs"]
        );
        let grep = framework_tool("grep").unwrap();
        assert_eq!(
            path_arguments(&grep, &json!({"pattern": "p", "directory": "src"})),
            ["src"]
        );
        let shell = framework_tool("shell").unwrap();
        assert_eq!(
            path_arguments(&shell, &json!({"command": "ls", "workdir": "sub"})),
            ["sub"]
        );
        // `todo` declares no path property.
        let todo = framework_tool("todo").unwrap();
        assert!(path_arguments(&todo, &json!({"path": "a"})).is_empty());
    }
}
