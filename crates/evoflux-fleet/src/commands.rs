//! The fleet command registry: `fleets/commands.yaml`.
//!
//! ```yaml
//! version: 1
//! commands:
//!   test:
//!     argv: [cargo, test, --workspace]
//!     timeoutMs: 900000
//!   acceptance:
//!     argv: [node, "{{path}}"]
//!   lint-file:
//!     argv: [ruff, check]
//!     argumentSlots: [{name: file, maxLength: 512}]
//! ```
//!
//! Strictness is the point: unknown keys are errors, ids and environment
//! names have fixed grammars, a working directory stays inside the
//! workspace, and a placeholder occupies a whole argv token. A command runs
//! argv-only (no shell), with no stdin, in a closed environment: the
//! variables of [`FLEET_COMMAND_BASE_ENV`] that are set, the names the
//! command declares in `env`, and `AI_AGENT=evoflux`, nothing else.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use evoflux_core::Diagnostic;
use yaml_serde::{Mapping, Value};

/// The variables every registered command receives when set. A closed
/// list: a command that needs one more names it in its `env`.
pub const FLEET_COMMAND_BASE_ENV: &[&str] = &["PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR"];

/// Set for every registered command, so a script can tell an agent ran it.
pub const AGENT_MARKER: (&str, &str) = ("AI_AGENT", "evoflux");

/// `timeoutMs` when a command names none.
pub const DEFAULT_TIMEOUT_MS: u64 = 600_000;
pub const MIN_TIMEOUT_MS: u64 = 1_000;
pub const MAX_TIMEOUT_MS: u64 = 3_600_000;

/// At most this many declared argument slots per command.
pub const MAX_ARGUMENT_SLOTS: usize = 64;
/// The largest `maxLength` a slot may declare.
pub const MAX_SLOT_LENGTH: usize = 8_192;
/// The longest command id.
const MAX_ID_LEN: usize = 64;

/// What to do when a command is missing: said with every such error.
pub const REMEDY: &str =
    "declare each id in fleets/commands.yaml under `commands:` with an `argv` list";

/// The registry of one compiled graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRegistry {
    /// The file it was read from.
    pub path: PathBuf,
    commands: BTreeMap<String, FleetCommand>,
}

/// One registered command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetCommand {
    pub id: String,
    /// Program first; `{{name}}` tokens are filled by the caller.
    pub argv: Vec<String>,
    /// Relative to the workspace root; empty for the root itself.
    pub cwd: PathBuf,
    pub timeout_ms: u64,
    /// Variables passed through beyond the base environment.
    pub env: Vec<String>,
    pub description: Option<String>,
    /// Values a caller appends after `argv`, all required, in order.
    pub argument_slots: Vec<ArgumentSlot>,
}

/// A declared argument a caller supplies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgumentSlot {
    pub name: String,
    pub max_length: usize,
}

impl ArgumentSlot {
    /// Whether `value` may fill this slot: non-empty data of at most
    /// `max_length` characters, without NUL and without a leading dash, so
    /// a contract can pass data but never a flag the operator did not put
    /// in `argv`.
    pub fn accepts(&self, value: &str) -> bool {
        argument_value_ok(value, self.max_length)
    }
}

/// Whether `value` is acceptable data for one appended argument of at most
/// `max_chars` characters: non-empty, no NUL, no leading dash. The rule
/// every slot applies; plan compilation applies it with the largest slot
/// length to a `--var` value before the value reaches the plan.
pub fn argument_value_ok(value: &str, max_chars: usize) -> bool {
    !value.is_empty()
        && value.chars().count() <= max_chars
        && !value.contains('\0')
        && !value.starts_with('-')
}

/// Why `fleets/commands.yaml` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    #[error("fleet commands {}: invalid YAML ({reason})", path.display())]
    Yaml { path: PathBuf, reason: String },
    /// Refused before parsing by the nesting guard.
    #[error("fleet commands {}: {error}", path.display())]
    TooComplex {
        path: PathBuf,
        error: evoflux_core::nesting::NestingError,
    },
    /// `pointer` names the field (`/commands/test/argv`).
    #[error("fleet commands {}: {pointer}: {message}", path.display())]
    Invalid {
        path: PathBuf,
        pointer: String,
        message: String,
    },
}

impl RegistryError {
    pub fn code(&self) -> &'static str {
        match self {
            RegistryError::Yaml { .. } => "fleet/commands-yaml",
            RegistryError::TooComplex { error, .. } => error.code(),
            RegistryError::Invalid { .. } => "fleet/commands-invalid",
        }
    }

    /// The error as a diagnostic naming the file and the field.
    pub fn to_diagnostic(&self) -> Diagnostic {
        let d = Diagnostic::error(self.code(), self.to_string());
        match self {
            RegistryError::Yaml { path, .. } => d.with_file(path),
            RegistryError::TooComplex { path, error } => d.with_file(path).with_line(error.line),
            RegistryError::Invalid { path, pointer, .. } => {
                d.with_file(path).with_field(pointer.clone())
            }
        }
    }
}

/// Why a call of a registered command cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    #[error(
        "no command `{id}` is registered (registered: {}); {REMEDY}",
        list(registered)
    )]
    Unknown { id: String, registered: Vec<String> },
    #[error(
        "fleet command '{id}': expected {expected} declared argument slots, got {got}; the \
         operator must declare argumentSlots in fleets/commands.yaml"
    )]
    ArgumentCount {
        id: String,
        expected: usize,
        got: usize,
    },
    #[error(
        "fleet command '{id}': argument '{slot}' must be nonempty data of at most {max} \
         characters, without NUL or a leading dash; fixed flags belong in argv"
    )]
    ArgumentInvalid {
        id: String,
        slot: String,
        max: usize,
    },
    #[error("fleet command '{id}' has no value for placeholder '{{{{{name}}}}}'")]
    Placeholder { id: String, name: String },
}

impl CommandError {
    pub fn code(&self) -> &'static str {
        match self {
            CommandError::Unknown { .. } => "fleet/command-unknown",
            CommandError::ArgumentCount { .. } => "fleet/command-argument-count",
            CommandError::ArgumentInvalid { .. } => "fleet/command-argument-invalid",
            CommandError::Placeholder { .. } => "fleet/command-placeholder",
        }
    }
}

/// Ids as a message lists them: joined by `, `, or `none`.
pub(crate) fn list(ids: &[String]) -> String {
    if ids.is_empty() {
        "none".to_owned()
    } else {
        ids.join(", ")
    }
}

impl CommandRegistry {
    /// Parses and validates the registry text read from `path`.
    pub fn parse(path: &Path, text: &str) -> Result<CommandRegistry, RegistryError> {
        evoflux_core::nesting::check_yaml(text).map_err(|error| RegistryError::TooComplex {
            path: path.to_path_buf(),
            error,
        })?;
        let value: Value = yaml_serde::from_str(text).map_err(|e| RegistryError::Yaml {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        let p = Parser { path };
        let top = p.mapping(&value, "")?;
        p.only_keys(top, "", &["version", "commands"])?;
        match top.get("version") {
            Some(Value::Number(n)) if n.as_u64() == Some(1) => {}
            Some(_) => return Err(p.invalid("/version", "must be 1")),
            None => return Err(p.invalid("", "must have required property 'version'")),
        }
        let Some(commands) = top.get("commands") else {
            return Err(p.invalid("", "must have required property 'commands'"));
        };
        let commands = p.mapping(commands, "/commands")?;
        if commands.is_empty() {
            return Err(p.invalid("/commands", "must declare at least one command"));
        }
        let mut out = BTreeMap::new();
        for (key, body) in commands {
            let Some(id) = key.as_str() else {
                return Err(p.invalid("/commands", "command ids must be strings"));
            };
            if !is_command_id(id) {
                return Err(p.invalid(
                    &format!("/commands/{id}"),
                    &format!("command id '{id}' must match ^[a-z0-9][a-z0-9._-]{{0,63}}$"),
                ));
            }
            out.insert(id.to_owned(), p.command(id, body)?);
        }
        Ok(CommandRegistry {
            path: path.to_path_buf(),
            commands: out,
        })
    }

    pub fn get(&self, id: &str) -> Option<&FleetCommand> {
        self.commands.get(id)
    }

    /// The command `id`, or an error listing what is registered.
    pub fn require(&self, id: &str) -> Result<&FleetCommand, CommandError> {
        self.get(id).ok_or_else(|| CommandError::Unknown {
            id: id.to_owned(),
            registered: self.commands.keys().cloned().collect(),
        })
    }

    /// Commands in id order.
    pub fn iter(&self) -> impl Iterator<Item = &FleetCommand> {
        self.commands.values()
    }

    pub fn len(&self) -> usize {
        self.commands.len()
    }

    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }
}

impl FleetCommand {
    /// The whole-token placeholders of `argv`, in order.
    pub fn placeholders(&self) -> impl Iterator<Item = &str> {
        self.argv.iter().filter_map(|a| placeholder(a))
    }

    /// The argv to run: placeholders filled from `vars`, then one value per
    /// declared argument slot appended. Every value is checked; nothing is
    /// ever split or interpreted.
    pub fn bind(
        &self,
        vars: &BTreeMap<String, String>,
        args: &[String],
    ) -> Result<Vec<String>, CommandError> {
        self.check_arguments(args, |_| false)?;
        let mut out = Vec::with_capacity(self.argv.len() + args.len());
        for token in &self.argv {
            match placeholder(token) {
                None => out.push(token.clone()),
                Some(name) => match vars.get(name).filter(|v| !v.is_empty()) {
                    Some(v) => out.push(v.clone()),
                    None => {
                        return Err(CommandError::Placeholder {
                            id: self.id.clone(),
                            name: name.to_owned(),
                        });
                    }
                },
            }
        }
        out.extend(args.iter().cloned());
        Ok(out)
    }

    /// Whether `args` fill the declared slots exactly: one value per slot,
    /// each one [`ArgumentSlot::accepts`]. A value for which `deferred`
    /// answers true stands for one supplied later (a contract's whole-token
    /// `{{var}}`, checked when the run binds it) and is not judged now.
    /// The one statement of the slot rules: a contract is validated with
    /// it and a run binds with it.
    pub fn check_arguments(
        &self,
        args: &[String],
        deferred: impl Fn(&str) -> bool,
    ) -> Result<(), CommandError> {
        if args.len() != self.argument_slots.len() {
            return Err(CommandError::ArgumentCount {
                id: self.id.clone(),
                expected: self.argument_slots.len(),
                got: args.len(),
            });
        }
        for (slot, value) in self.argument_slots.iter().zip(args) {
            if !deferred(value) && !slot.accepts(value) {
                return Err(CommandError::ArgumentInvalid {
                    id: self.id.clone(),
                    slot: slot.name.clone(),
                    max: slot.max_length,
                });
            }
        }
        Ok(())
    }

    /// The command's whole environment, from the parent's: the base
    /// variables that are set, the declared names that are set, and the
    /// agent marker.
    pub fn environment(&self, parent: &[(OsString, OsString)]) -> Vec<(OsString, OsString)> {
        let mut out: Vec<(OsString, OsString)> = parent
            .iter()
            .filter(|(name, _)| {
                name.to_str().is_some_and(|n| {
                    FLEET_COMMAND_BASE_ENV.contains(&n) || self.env.iter().any(|d| d == n)
                })
            })
            .cloned()
            .collect();
        out.retain(|(name, _)| name != AGENT_MARKER.0);
        out.push((AGENT_MARKER.0.into(), AGENT_MARKER.1.into()));
        out
    }

    /// How the command is shown: its argv joined by spaces.
    pub fn display(&self) -> String {
        self.argv.join(" ")
    }
}

/// `^[a-z0-9][a-z0-9._-]{0,63}$`.
fn is_command_id(id: &str) -> bool {
    let mut chars = id.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && id.len() <= MAX_ID_LEN
        && chars
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'))
}

/// `^[A-Z_][A-Z0-9_]*$`.
fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_uppercase() || c == '_')
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// `^[A-Za-z][A-Za-z0-9_-]{0,63}$`.
fn is_slot_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
}

/// The name of a whole-token placeholder `{{name}}`.
fn placeholder(token: &str) -> Option<&str> {
    let name = token.strip_prefix("{{")?.strip_suffix("}}")?;
    let mut chars = name.chars();
    (chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
    .then_some(name)
}

struct Parser<'a> {
    path: &'a Path,
}

impl Parser<'_> {
    fn invalid(&self, pointer: &str, message: &str) -> RegistryError {
        RegistryError::Invalid {
            path: self.path.to_path_buf(),
            pointer: if pointer.is_empty() {
                "/".to_owned()
            } else {
                pointer.to_owned()
            },
            message: message.to_owned(),
        }
    }

    fn mapping<'v>(&self, v: &'v Value, pointer: &str) -> Result<&'v Mapping, RegistryError> {
        v.as_mapping()
            .ok_or_else(|| self.invalid(pointer, "must be a mapping"))
    }

    fn only_keys(&self, m: &Mapping, pointer: &str, allowed: &[&str]) -> Result<(), RegistryError> {
        for key in m.keys() {
            let name = key.as_str().unwrap_or("(not a string)");
            if !allowed.contains(&name) {
                return Err(self.invalid(
                    pointer,
                    &format!("unknown key `{name}` (allowed: {})", allowed.join(", ")),
                ));
            }
        }
        Ok(())
    }

    fn command(&self, id: &str, body: &Value) -> Result<FleetCommand, RegistryError> {
        let at = format!("/commands/{id}");
        let m = self.mapping(body, &at)?;
        self.only_keys(
            m,
            &at,
            &[
                "argv",
                "cwd",
                "timeoutMs",
                "env",
                "description",
                "argumentSlots",
            ],
        )?;
        let argv = self.argv(id, m.get("argv"), &format!("{at}/argv"))?;
        let cwd = match m.get("cwd") {
            None => PathBuf::new(),
            Some(Value::String(s)) => self.cwd(s, &format!("{at}/cwd"))?,
            Some(_) => return Err(self.invalid(&format!("{at}/cwd"), "must be a string")),
        };
        let timeout_ms = match m.get("timeoutMs") {
            None => DEFAULT_TIMEOUT_MS,
            Some(Value::Number(n)) => match n.as_u64() {
                Some(t) if (MIN_TIMEOUT_MS..=MAX_TIMEOUT_MS).contains(&t) => t,
                _ => {
                    return Err(self.invalid(
                        &format!("{at}/timeoutMs"),
                        &format!("must be an integer from {MIN_TIMEOUT_MS} to {MAX_TIMEOUT_MS}"),
                    ));
                }
            },
            Some(_) => {
                return Err(self.invalid(&format!("{at}/timeoutMs"), "must be an integer"));
            }
        };
        let env = match m.get("env") {
            None => Vec::new(),
            Some(Value::Sequence(items)) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    match item.as_str() {
                        Some(n) if is_env_name(n) => out.push(n.to_owned()),
                        Some(n) => {
                            return Err(self.invalid(
                                &format!("{at}/env/{i}"),
                                &format!("env name '{n}' is not a variable name"),
                            ));
                        }
                        None => {
                            return Err(self.invalid(&format!("{at}/env/{i}"), "must be a string"));
                        }
                    }
                }
                out
            }
            Some(_) => return Err(self.invalid(&format!("{at}/env"), "must be a list of names")),
        };
        let description = match m.get("description") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                return Err(self.invalid(&format!("{at}/description"), "must be a string"));
            }
        };
        let argument_slots = match m.get("argumentSlots") {
            None => Vec::new(),
            Some(v) => self.slots(v, &format!("{at}/argumentSlots"))?,
        };
        Ok(FleetCommand {
            id: id.to_owned(),
            argv,
            cwd,
            timeout_ms,
            env,
            description,
            argument_slots,
        })
    }

    fn argv(&self, id: &str, v: Option<&Value>, at: &str) -> Result<Vec<String>, RegistryError> {
        let Some(Value::Sequence(items)) = v else {
            return Err(self.invalid(at, "must be a list of at least one string"));
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let Some(token) = item.as_str() else {
                return Err(self.invalid(&format!("{at}/{i}"), "must be a string"));
            };
            if token.is_empty() {
                return Err(self.invalid(&format!("{at}/{i}"), "must not be empty"));
            }
            if placeholder(token).is_none() && (token.contains("{{") || token.contains("}}")) {
                return Err(self.invalid(
                    &format!("{at}/{i}"),
                    &format!("command '{id}' argv token '{token}' embeds a placeholder; a placeholder must be a whole argument"),
                ));
            }
            out.push(token.to_owned());
        }
        match out.first() {
            None => Err(self.invalid(at, "must be a list of at least one string")),
            Some(first) if first.trim().is_empty() => Err(self.invalid(
                &format!("{at}/0"),
                &format!("command '{id}' has an empty executable"),
            )),
            Some(first) if placeholder(first).is_some() => Err(self.invalid(
                &format!("{at}/0"),
                &format!("command '{id}': the program must be fixed, not a placeholder"),
            )),
            Some(_) => Ok(out),
        }
    }

    fn cwd(&self, s: &str, at: &str) -> Result<PathBuf, RegistryError> {
        let p = Path::new(s);
        if p.is_absolute() {
            return Err(self.invalid(at, "cwd must be workspace-relative"));
        }
        let mut out = PathBuf::new();
        for c in p.components() {
            match c {
                Component::Normal(part) => out.push(part),
                Component::CurDir => {}
                Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                    return Err(self.invalid(at, "cwd escapes the workspace"));
                }
            }
        }
        Ok(out)
    }

    fn slots(&self, v: &Value, at: &str) -> Result<Vec<ArgumentSlot>, RegistryError> {
        let Some(items) = v.as_sequence() else {
            return Err(self.invalid(at, "must be a list"));
        };
        if items.is_empty() || items.len() > MAX_ARGUMENT_SLOTS {
            return Err(self.invalid(
                at,
                &format!("must declare from 1 to {MAX_ARGUMENT_SLOTS} slots"),
            ));
        }
        let mut out: Vec<ArgumentSlot> = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let here = format!("{at}/{i}");
            let m = self.mapping(item, &here)?;
            self.only_keys(m, &here, &["name", "maxLength"])?;
            let name = match m.get("name").and_then(Value::as_str) {
                Some(n) if is_slot_name(n) => n.to_owned(),
                _ => {
                    return Err(self.invalid(
                        &format!("{here}/name"),
                        "must match ^[A-Za-z][A-Za-z0-9_-]{0,63}$",
                    ));
                }
            };
            if out.iter().any(|s| s.name == name) {
                return Err(self.invalid(
                    &format!("{here}/name"),
                    &format!("slot '{name}' is declared twice"),
                ));
            }
            let max_length = match m.get("maxLength").and_then(Value::as_u64) {
                Some(n) if (1..=MAX_SLOT_LENGTH as u64).contains(&n) => n as usize,
                _ => {
                    return Err(self.invalid(
                        &format!("{here}/maxLength"),
                        &format!("must be an integer from 1 to {MAX_SLOT_LENGTH}"),
                    ));
                }
            };
            out.push(ArgumentSlot { name, max_length });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<CommandRegistry, RegistryError> {
        CommandRegistry::parse(Path::new("/repo/.evoflux/fleets/commands.yaml"), text)
    }

    fn pointer_and_message(e: RegistryError) -> (String, String) {
        match e {
            RegistryError::Invalid {
                pointer, message, ..
            } => (pointer, message),
            RegistryError::Yaml { reason, .. } => ("(yaml)".into(), reason),
            RegistryError::TooComplex { error, .. } => ("(yaml)".into(), error.to_string()),
        }
    }

    #[test]
    fn hostile_nesting_is_refused_before_parsing() {
        let text = format!(
            "version: 1\ncommands:\n  test:\n    argv: {}{}\n",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let d = parse(&text).unwrap_err().to_diagnostic();
        assert_eq!(
            (d.code.as_ref(), d.locator.line),
            ("yaml/too-deep", Some(4))
        );
        let aliases = "version: 1\nx: &x [a, b, c, d, e, f, g, h]\ncommands:\n".to_owned()
            + &"  - [*x, *x, *x, *x, *x, *x, *x, *x]\n".repeat(400);
        assert_eq!(parse(&aliases).unwrap_err().code(), "yaml/too-many-aliases");
    }

    #[test]
    fn a_registry_parses_with_defaults_and_slots() {
        let r = parse(
            "version: 1\ncommands:\n  test:\n    argv: [cargo, test]\n  lint-file:\n    argv: [ruff, check]\n    cwd: ./py\n    timeoutMs: 5000\n    env: [RUFF_CACHE_DIR]\n    description: Lint one file\n    argumentSlots: [{name: file, maxLength: 10}]\n",
        )
        .unwrap();
        assert_eq!(r.len(), 2);
        let test = r.get("test").unwrap();
        assert_eq!(test.timeout_ms, DEFAULT_TIMEOUT_MS);
        assert_eq!(test.cwd, PathBuf::new());
        let lint = r.get("lint-file").unwrap();
        assert_eq!(lint.cwd, PathBuf::from("py"));
        assert_eq!(lint.env, ["RUFF_CACHE_DIR"]);
        assert_eq!(
            lint.bind(&BTreeMap::new(), &["a.py".into()]).unwrap(),
            ["ruff", "check", "a.py"]
        );
        assert_eq!(
            r.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
            ["lint-file", "test"]
        );
    }

    #[test]
    fn bad_registries_name_the_field_and_the_rule() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "version: 2\ncommands: {a: {argv: [x]}}",
                "/version",
                "must be 1",
            ),
            ("version: 1\ncommands: {}", "/commands", "at least one"),
            (
                "version: 1\ncommands: {a: {argv: [x]}}\nextra: 1",
                "/",
                "unknown key `extra`",
            ),
            (
                "version: 1\ncommands: {Bad: {argv: [x]}}",
                "/commands/Bad",
                "must match",
            ),
            (
                "version: 1\ncommands: {a: {argv: [x], shell: true}}",
                "/commands/a",
                "unknown key `shell`",
            ),
            (
                "version: 1\ncommands: {a: {argv: []}}",
                "/commands/a/argv",
                "at least one",
            ),
            (
                "version: 1\ncommands: {a: {argv: [' ']}}",
                "/commands/a/argv/0",
                "empty executable",
            ),
            (
                "version: 1\ncommands: {a: {argv: [node, '--x={{y}}']}}",
                "/commands/a/argv/1",
                "embeds a placeholder",
            ),
            (
                "version: 1\ncommands: {a: {argv: ['{{p}}']}}",
                "/commands/a/argv/0",
                "must be fixed",
            ),
            (
                "version: 1\ncommands: {a: {argv: [x], cwd: /tmp}}",
                "/commands/a/cwd",
                "workspace-relative",
            ),
            (
                "version: 1\ncommands: {a: {argv: [x], cwd: 'a/../..'}}",
                "/commands/a/cwd",
                "escapes the workspace",
            ),
            (
                "version: 1\ncommands: {a: {argv: [x], timeoutMs: 10}}",
                "/commands/a/timeoutMs",
                "from 1000",
            ),
            (
                "version: 1\ncommands: {a: {argv: [x], env: [lower]}}",
                "/commands/a/env/0",
                "env name 'lower'",
            ),
            (
                "version: 1\ncommands: {a: {argv: [x], argumentSlots: [{name: f, maxLength: 9000}]}}",
                "/commands/a/argumentSlots/0/maxLength",
                "from 1 to 8192",
            ),
            (
                "version: 1\ncommands: {a: {argv: [x], argumentSlots: [{name: f, maxLength: 1}, {name: f, maxLength: 1}]}}",
                "/commands/a/argumentSlots/1/name",
                "declared twice",
            ),
        ];
        for (text, pointer, needle) in cases {
            let e = parse(text).unwrap_err();
            assert_eq!(e.code(), "fleet/commands-invalid", "{text}");
            let (p, m) = pointer_and_message(e);
            assert_eq!(p, *pointer, "{text}: {m}");
            assert!(m.contains(needle), "{text}: {m}");
        }
        let e = parse("version: [").unwrap_err();
        assert_eq!(e.code(), "fleet/commands-yaml");
        assert!(e.to_string().contains("commands.yaml"));
    }

    #[test]
    fn arguments_fill_declared_slots_only_and_never_become_flags() {
        let r = parse(
            "version: 1\ncommands:\n  gate:\n    argv: [node, '{{path}}']\n  one:\n    argv: [check]\n    argumentSlots: [{name: file, maxLength: 5}]\n",
        )
        .unwrap();
        let one = r.get("one").unwrap();
        for (args, code) in [
            (vec![], "fleet/command-argument-count"),
            (
                vec!["a".to_owned(), "b".to_owned()],
                "fleet/command-argument-count",
            ),
            (vec!["--all".to_owned()], "fleet/command-argument-invalid"),
            (vec!["toolong".to_owned()], "fleet/command-argument-invalid"),
            (vec![String::new()], "fleet/command-argument-invalid"),
            (vec!["a\0b".to_owned()], "fleet/command-argument-invalid"),
        ] {
            assert_eq!(one.bind(&BTreeMap::new(), &args).unwrap_err().code(), code);
        }
        let gate = r.get("gate").unwrap();
        assert_eq!(gate.placeholders().collect::<Vec<_>>(), ["path"]);
        assert_eq!(
            gate.bind(&BTreeMap::new(), &[]).unwrap_err().code(),
            "fleet/command-placeholder"
        );
        let vars = BTreeMap::from([("path".to_owned(), "tests/gate file.mjs".to_owned())]);
        assert_eq!(
            gate.bind(&vars, &[]).unwrap(),
            ["node", "tests/gate file.mjs"]
        );
        let e = r.require("nope").unwrap_err();
        assert_eq!(e.code(), "fleet/command-unknown");
        assert!(e.to_string().contains("registered: gate, one"), "{e}");
    }

    #[test]
    fn the_environment_is_closed() {
        let r = parse("version: 1\ncommands: {t: {argv: [x], env: [CARGO_HOME]}}").unwrap();
        let parent: Vec<(OsString, OsString)> = [
            ("PATH", "/bin"),
            ("HOME", "/h"),
            ("OPENAI_API_KEY", "sk-secret"),
            ("EVOFLUX_DATA_DIR", "/d"),
            ("CARGO_HOME", "/c"),
            ("USER", "me"),
            ("AI_AGENT", "someone-else"),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
        let env = r.get("t").unwrap().environment(&parent);
        let names: Vec<String> = env
            .iter()
            .map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy()))
            .collect();
        assert_eq!(
            names,
            ["PATH=/bin", "HOME=/h", "CARGO_HOME=/c", "AI_AGENT=evoflux"]
        );
    }
}
