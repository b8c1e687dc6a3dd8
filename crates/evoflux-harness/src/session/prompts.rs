//! The session's prompt commands and resource references, applied where
//! a turn takes the user's message: `/name args` on the first line
//! becomes the command's prompt and every `@server:uri` attaches the
//! resource's text, so each front end gets them by submitting text
//! (see [`crate::prompt_commands`] for the rules themselves).

use evoflux_mcp::{McpPromptDescriptor, McpResource, McpResourceContents, ResourceBody};

use super::Harness;
use crate::prompt_commands::{
    self as pc, CommandError, CommandFolder, FileCommand, MAX_RESOURCE_TEXT, MAX_RESOURCES_TEXT,
    PromptCommand, PromptSource,
};

/// What a typed `/name` resolves to.
enum Resolved<'a> {
    File(&'a FileCommand),
    Mcp(McpPromptDescriptor),
}

impl Harness {
    /// Sets the commands read from files (Claude Code commands, codex
    /// prompts), in precedence order; the application reads them.
    pub fn use_prompt_files(&mut self, files: Vec<FileCommand>) {
        self.prompt_files = files;
    }

    /// Every command the user can type as `/name args` now: the file
    /// commands, then the prompts of the MCP servers this session may use
    /// that are ready.
    pub fn prompt_commands(&self) -> Vec<PromptCommand> {
        let mut out: Vec<PromptCommand> = self
            .prompt_files
            .iter()
            .map(|f| f.command.clone())
            .collect();
        out.extend(self.granted_prompts().into_iter().map(|p| PromptCommand {
            argument_hint: pc::prompt_argument_hint(&p.arguments),
            name: p.qualified_name,
            description: p.description,
            source: PromptSource::McpPrompt {
                server: p.owner.server_ref(&p.server),
                prompt: p.prompt,
            },
        }));
        out
    }

    /// The resources the ready MCP servers this session may use list, by
    /// server reference, for completing `@server:uri`. A server whose
    /// listing fails is left out (its error is the server's to report).
    pub async fn mcp_resources(&self) -> Vec<(String, McpResource)> {
        let Some(rt) = &self.mcp.runtime else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for status in rt.statuses() {
            if status.state != evoflux_mcp::ServerState::Ready
                || !self.mcp_granted(&status.owner, &status.name, status.webbridge)
            {
                continue;
            }
            let server = status.owner.server_ref(&status.name);
            match rt.list_resources(&server, self.mcp.call_timeout).await {
                Ok(list) => out.extend(list.into_iter().map(|r| (server.clone(), r))),
                Err(e) => tracing::warn!(server, error = %e, "resources/list failed"),
            }
        }
        out
    }

    /// Whether `text` starts with `/name` for a command of this session
    /// (front ends send it as a message instead of refusing an unknown
    /// command of their own).
    pub fn names_prompt_command(&self, text: &str) -> bool {
        pc::parse_invocation(text).is_some_and(|(name, _)| self.resolve_command(name).is_some())
    }

    fn granted_prompts(&self) -> Vec<McpPromptDescriptor> {
        let Some(rt) = &self.mcp.runtime else {
            return Vec::new();
        };
        rt.prompt_set()
            .prompts()
            .iter()
            .filter(|p| self.mcp_granted(&p.owner, &p.server, p.webbridge))
            .cloned()
            .collect()
    }

    /// `name` as typed: a file command (codex prompts also by their bare
    /// name when nothing else has it), else an MCP prompt.
    fn resolve_command(&self, name: &str) -> Option<Resolved<'_>> {
        if let Some(f) = self.prompt_files.iter().find(|f| f.command.name == name) {
            return Some(Resolved::File(f));
        }
        let bare = format!("prompts:{name}");
        let codex: Vec<&FileCommand> = self
            .prompt_files
            .iter()
            .filter(|f| f.command.name == bare)
            .collect();
        if let [only] = codex.as_slice() {
            return Some(Resolved::File(only));
        }
        self.granted_prompts()
            .into_iter()
            .find(|p| p.qualified_name == name)
            .map(Resolved::Mcp)
    }

    /// The message the model reads for what the user typed: a command on
    /// the first line expanded (the typed line kept above it), and the
    /// resources it references attached. Text without either is returned
    /// as typed; an unknown `/word` stays as typed.
    pub(super) async fn expand_input(&self, text: &str) -> Result<String, CommandError> {
        // Only the user types commands: a child's task, written by its
        // lead, is sent as written.
        if self.root != self.session.id {
            return Ok(text.to_owned());
        }
        let invoked = pc::parse_invocation(text).is_some();
        if !invoked && pc::resource_references(text).is_empty() {
            return Ok(text.to_owned());
        }
        // An MCP prompt or resource may be of a server still starting (the
        // session's first message): wait for it as the first model call would.
        self.await_granted_mcp().await;
        let mut out = match pc::parse_invocation(text)
            .and_then(|(name, args)| self.resolve_command(name).map(|r| (name, args, r)))
        {
            Some((name, args, resolved)) => {
                let expanded = self.expand_command(name, args, resolved).await?;
                let typed = text.lines().next().unwrap_or(text);
                format!("{typed}\n\n<command name=\"{name}\">\n{expanded}\n</command>")
            }
            None => text.to_owned(),
        };
        let attached = self.attach_resources(text).await?;
        if !attached.is_empty() {
            out.push_str("\n\n");
            out.push_str(&attached);
        }
        Ok(out)
    }

    async fn expand_command(
        &self,
        name: &str,
        args: &str,
        resolved: Resolved<'_>,
    ) -> Result<String, CommandError> {
        match resolved {
            Resolved::File(f) => {
                let folder = match &f.command.source {
                    PromptSource::CodexPrompt { .. } => CommandFolder::CodexPrompts,
                    PromptSource::ClaudeCommand { .. } | PromptSource::McpPrompt { .. } => {
                        CommandFolder::ClaudeCommands
                    }
                };
                Ok(pc::substitute(&f.template, args, folder)
                    .trim_end()
                    .to_owned())
            }
            Resolved::Mcp(p) => {
                let args = pc::map_prompt_arguments(name, &p.arguments, args)?;
                let failed = |e: evoflux_mcp::McpError| CommandError::PromptFailed {
                    command: name.to_owned(),
                    code: e.code(),
                    message: e.to_string(),
                };
                let Some(rt) = &self.mcp.runtime else {
                    return Err(failed(evoflux_mcp::McpError::NoRuntime));
                };
                let result = rt
                    .prompt_set()
                    .get_prompt(&p.qualified_name, args, self.mcp.call_timeout)
                    .await
                    .map_err(failed)?;
                let parts: Vec<String> = result
                    .messages
                    .iter()
                    .map(|(role, content)| match role.as_str() {
                        "user" => content.to_text(),
                        other => format!("[{other}] {}", content.to_text()),
                    })
                    .collect();
                Ok(parts.join("\n\n"))
            }
        }
    }

    /// The text of every `@server:uri` the user typed, each bounded, all
    /// together bounded; binary parts are named, not inlined.
    async fn attach_resources(&self, text: &str) -> Result<String, CommandError> {
        let refs = pc::resource_references(text);
        if refs.is_empty() {
            return Ok(String::new());
        }
        let known: Vec<String> = self.mcp.runtime.as_ref().map_or_else(Vec::new, |rt| {
            rt.statuses()
                .into_iter()
                .filter(|s| self.mcp_granted(&s.owner, &s.name, s.webbridge))
                .map(|s| s.owner.server_ref(&s.name))
                .collect()
        });
        let mut blocks = Vec::new();
        let mut budget = MAX_RESOURCES_TEXT;
        for (server, uri) in refs {
            let Some(rt) = self
                .mcp
                .runtime
                .as_ref()
                .filter(|_| known.contains(&server))
            else {
                return Err(CommandError::ResourceServerUnknown {
                    server,
                    uri,
                    known: match known.is_empty() {
                        true => "(none)".to_owned(),
                        false => known.join(", "),
                    },
                });
            };
            let parts = rt
                .read_resource(&server, &uri, self.mcp.call_timeout)
                .await
                .map_err(|e| CommandError::ResourceReadFailed {
                    server: server.clone(),
                    uri: uri.clone(),
                    code: e.code(),
                    message: e.to_string(),
                })?;
            if parts.is_empty() {
                return Err(CommandError::ResourceReadFailed {
                    server,
                    uri,
                    code: "mcp/resource-empty",
                    message: "the server returned no contents".to_owned(),
                });
            }
            for part in parts {
                blocks.push(resource_block(&server, &uri, &part, &mut budget));
            }
        }
        Ok(blocks.join("\n\n"))
    }
}

/// One resource part as the model reads it, taking its text from `budget`.
fn resource_block(
    server: &str,
    asked: &str,
    part: &McpResourceContents,
    budget: &mut usize,
) -> String {
    let uri = if part.uri.is_empty() {
        asked
    } else {
        &part.uri
    };
    let mime = part.mime_type.as_deref().unwrap_or("unknown");
    let body = match &part.body {
        ResourceBody::Text { text } => {
            let max = MAX_RESOURCE_TEXT.min(*budget);
            let (kept, cut) = pc::clip(text, max);
            *budget -= kept.len();
            match cut {
                false => kept.to_owned(),
                true => format!(
                    "{kept}\n[… cut: the resource has {} bytes; {} were attached]",
                    text.len(),
                    kept.len()
                ),
            }
        }
        ResourceBody::Blob { base64 } => format!(
            "[binary contents ({mime}, {} base64 characters): not attached as text]",
            base64.len()
        ),
    };
    format!("<resource server=\"{server}\" uri=\"{uri}\" mime=\"{mime}\">\n{body}\n</resource>")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_part(text: String) -> McpResourceContents {
        McpResourceContents {
            uri: "demo://x".into(),
            mime_type: Some("text/plain".into()),
            body: ResourceBody::Text { text },
        }
    }

    #[test]
    fn resource_text_is_bounded_per_resource_and_per_message() {
        let mut budget = MAX_RESOURCES_TEXT;
        let big = "a".repeat(MAX_RESOURCE_TEXT + 10);
        let block = resource_block("s", "demo://x", &text_part(big), &mut budget);
        assert!(block.starts_with("<resource server=\"s\" uri=\"demo://x\" mime=\"text/plain\">"));
        assert!(block.contains(&format!(
            "[… cut: the resource has {} bytes; {} were attached]",
            MAX_RESOURCE_TEXT + 10,
            MAX_RESOURCE_TEXT
        )));
        assert_eq!(budget, MAX_RESOURCES_TEXT - MAX_RESOURCE_TEXT);
        budget = 2;
        let block = resource_block("s", "demo://x", &text_part("héllo".into()), &mut budget);
        // Cut on a character boundary, within what is left.
        assert!(
            block.contains("\nh\n[… cut: the resource has 6 bytes; 1 were attached]"),
            "{block}"
        );
    }

    #[test]
    fn binary_contents_are_named_not_inlined() {
        let mut budget = MAX_RESOURCES_TEXT;
        let part = McpResourceContents {
            uri: String::new(),
            mime_type: Some("image/png".into()),
            body: ResourceBody::Blob {
                base64: "QUJD".into(),
            },
        };
        let block = resource_block("s", "demo://img", &part, &mut budget);
        assert!(block.contains("uri=\"demo://img\""));
        assert!(
            block.contains(
                "[binary contents (image/png, 4 base64 characters): not attached as text]"
            )
        );
        assert!(!block.contains("QUJD"));
        assert_eq!(budget, MAX_RESOURCES_TEXT);
    }
}
