//! Strict `{{var}}` rendering of a fleet's prompt body.
//!
//! A placeholder is `{{`, optional spaces, a name `[A-Za-z_][A-Za-z0-9_-]*`,
//! optional spaces, `}}`. Every placeholder must resolve or rendering fails
//! before anything is dispatched, naming every missing variable at once (in
//! order of first appearance, each once): a run that discovers the second
//! missing name only after the operator fixed the first wastes a round
//! trip. Values are inserted literally and never expanded again, so a value
//! containing `{{x}}` stays text. Text that is not a placeholder (a lone
//! `{{`, `{{ 1x }}`) is left alone. No filters, no logic, no partial
//! rendering.

use std::collections::BTreeMap;

use evoflux_core::Diagnostic;

/// Variables a template needs and the caller did not supply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "fleet prompt: unresolved template variables: {}; give each a value for the run",
    names.join(", ")
)]
pub struct RenderError {
    /// Every missing name, in order of first appearance, each once.
    pub names: Vec<String>,
}

impl RenderError {
    pub const CODE: &'static str = "fleet/prompt-unresolved";

    pub fn to_diagnostic(&self, file: &std::path::Path) -> Diagnostic {
        Diagnostic::error(Self::CODE, self.to_string()).with_file(file)
    }
}

/// One piece of a template.
enum Piece<'a> {
    Text(&'a str),
    Var(&'a str),
}

/// The placeholder starting at the beginning of `s`: its name and length.
fn placeholder_at(s: &str) -> Option<(&str, usize)> {
    let rest = s.strip_prefix("{{")?;
    let inner_start = rest.len() - rest.trim_start_matches(' ').len();
    let rest2 = &rest[inner_start..];
    let name_len = rest2
        .char_indices()
        .find(|&(i, c)| {
            let ok = if i == 0 {
                c.is_ascii_alphabetic() || c == '_'
            } else {
                c.is_ascii_alphanumeric() || c == '_' || c == '-'
            };
            !ok
        })
        .map_or(rest2.len(), |(i, _)| i);
    if name_len == 0 {
        return None;
    }
    let name = &rest2[..name_len];
    let after = &rest2[name_len..];
    let spaces = after.len() - after.trim_start_matches(' ').len();
    after[spaces..].strip_prefix("}}")?;
    Some((name, 2 + inner_start + name_len + spaces + 2))
}

fn pieces(template: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut text_start = 0;
    let mut i = 0;
    while let Some(off) = template[i..].find("{{") {
        let at = i + off;
        match placeholder_at(&template[at..]) {
            Some((name, len)) => {
                if at > text_start {
                    out.push(Piece::Text(&template[text_start..at]));
                }
                out.push(Piece::Var(name));
                i = at + len;
                text_start = i;
            }
            // Not a placeholder: keep the first brace as text and look
            // again from the second, so `{{{x}}}` still finds `{{x}}`.
            None => i = at + 1,
        }
    }
    if text_start < template.len() {
        out.push(Piece::Text(&template[text_start..]));
    }
    out
}

/// The variable names `template` uses, in order of first appearance, each
/// once.
pub fn template_variables(template: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for piece in pieces(template) {
        if let Piece::Var(name) = piece
            && !out.iter().any(|n| n == name)
        {
            out.push(name.to_owned());
        }
    }
    out
}

/// Renders `template` with `vars`, or fails naming every missing variable.
pub fn render_fleet_prompt(
    template: &str,
    vars: &BTreeMap<String, String>,
) -> Result<String, RenderError> {
    let mut out = String::with_capacity(template.len());
    let mut missing: Vec<String> = Vec::new();
    for piece in pieces(template) {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Var(name) => match vars.get(name) {
                Some(v) => out.push_str(v),
                None => {
                    if !missing.iter().any(|n| n == name) {
                        missing.push(name.to_owned());
                    }
                }
            },
        }
    }
    if missing.is_empty() {
        Ok(out)
    } else {
        Err(RenderError { names: missing })
    }
}

/// The name of an argument that is exactly one placeholder (`{{name}}`,
/// spaces allowed inside the braces), which a code step's `args` may use.
pub fn whole_token_placeholder(token: &str) -> Option<&str> {
    match placeholder_at(token) {
        Some((name, len)) if len == token.len() => Some(name),
        Some(_) | None => None,
    }
}
