//! `evoflux plugin …`: the Agent Plugins lifecycle, exactly the commands of
//! the plugins spec, plus `credentials`.
//!
//! Imports and links install disabled unless `--enabled` is given: the user
//! reviews the trust record with `show` first. Every command prints JSON
//! with `--json`; failures are diagnostics on stderr with stable codes,
//! exit 3 when the input was invalid and 1 when the environment failed.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use evoflux_core::{Diagnostic, Diagnostics};
use evoflux_plugins::credentials::FieldType;
use evoflux_plugins::{
    CreateOptions, CredentialChange, CredentialState, CredentialValue, DataSelector, ExcludedBy,
    ExcludedEntry, InstallationId, KeptDataListing, LeftOutLink, Listing, NewInstallation,
    PackReport, PluginDetail, PluginError, PluginInspection, PluginManager, PluginPaths, Readiness,
    ScopedDiagnostic, ScopedDiagnosticsExt, SourceType, TrustChange, TrustReview, UpdateReview,
    UpdateTrust, Updated,
};
use serde_json::json;

use super::credential_input::{self, ValueSource};
use crate::output::{Exit, Output};

#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Scaffold a plugin folder: plugin.json and a starter skill.
    Create {
        /// The new folder (must not exist).
        dest: PathBuf,
        /// The plugin name (lowercase letters, digits, `-` and `.`).
        #[arg(long)]
        name: String,
        #[arg(long)]
        description: Option<String>,
        /// The starter skill's name (default: the plugin name).
        #[arg(long)]
        skill: Option<String>,
    },
    /// Validate a plugin folder or .evoplugin/.zip archive and show its
    /// skills, MCP servers and trust review, without installing or running
    /// anything. Exit 3 when invalid.
    Inspect { path: PathBuf },
    /// Write a Claude Code plugin (.claude-plugin/plugin.json, skills/,
    /// .mcp.json) as an Agent Plugins package in a new folder, naming what
    /// has no portable form (commands, agents, hooks). Nothing is run.
    /// `inspect` and `install` also take a Claude Code plugin directly.
    Import {
        /// The Claude Code plugin folder.
        path: PathBuf,
        /// The new package folder (must not exist).
        dest: PathBuf,
    },
    /// Register a development folder in place (not copied).
    Link {
        path: PathBuf,
        #[command(flatten)]
        state: EnableArgs,
    },
    /// Pack a plugin folder into a deterministic .evoplugin archive. `.env`
    /// and `.env.*` files, and whatever the folder's `.evopluginignore`
    /// names (gitignore syntax), are left out and listed.
    Pack {
        path: PathBuf,
        /// Where to write (default: <parent>/<name>-<version>.evoplugin).
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Install a copy of a plugin folder or .evoplugin/.zip archive.
    Install {
        path: PathBuf,
        #[command(flatten)]
        state: EnableArgs,
    },
    /// Replace an installed plugin's files in place (same id and data). An
    /// enabled plugin whose new version adds commands, hosts, environment
    /// names or capabilities is left disabled until you review the
    /// difference and enable it again.
    Update {
        installation_id: String,
        path: PathBuf,
        /// Keep it enabled (or enable it) whatever the new version adds,
        /// skipping the new trust review (for automation).
        #[arg(long)]
        enabled: bool,
    },
    /// List installed, linked and bundled plugins.
    List,
    /// Show one installation with its inspection and trust review.
    Show { installation_id: String },
    /// Disable an installation: its skills and MCP servers stop being used.
    Disable { installation_id: String },
    /// Enable an installation (review it with `show` first).
    Enable { installation_id: String },
    /// Remove an installation; PLUGIN_DATA is kept unless --remove-data.
    Uninstall {
        installation_id: String,
        /// Also delete the installation's data folder and credentials.
        #[arg(long)]
        remove_data: bool,
    },
    /// List or remove the data folders uninstalls kept (PLUGIN_DATA and
    /// credentials). Installing the same plugin again reattaches its kept
    /// data.
    Data {
        #[command(subcommand)]
        action: DataAction,
    },
    /// Show, set or clear the credentials a plugin declares (secrets are
    /// never printed).
    Credentials {
        installation_id: String,
        #[command(subcommand)]
        action: Option<CredentialsAction>,
    },
}

#[derive(Debug, Clone, Copy, Args)]
pub struct EnableArgs {
    /// Enable right away, skipping the trust review (for automation).
    #[arg(long, conflicts_with = "disabled")]
    enabled: bool,
    /// Install disabled (the default).
    #[arg(long)]
    disabled: bool,
}

#[derive(Debug, Subcommand)]
pub enum DataAction {
    /// List kept data folders: the plugin each was kept for, or none for a
    /// folder no record names.
    List,
    /// Delete the kept data of a plugin (by name), or one folder by
    /// installation id.
    Remove {
        /// The plugin name.
        #[arg(required_unless_present = "id", conflicts_with = "id")]
        name: Option<String>,
        /// One folder by its installation id (for folders without a name).
        #[arg(long)]
        id: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum CredentialsAction {
    /// Show the credentials form, secrets masked (the default).
    Show,
    /// Set values. Give a KEY alone and its value is asked for (secrets are
    /// not echoed) or, with --stdin or when standard input is not a
    /// terminal, read from standard input, one line per KEY in the order
    /// given. KEY=VALUE still works but leaves the value in your shell
    /// history and the process list: never use it for secrets. Booleans
    /// take true or false.
    Set {
        #[arg(required = true, value_name = "KEY")]
        keys: Vec<String>,
        /// Read the values of the KEYs given alone from standard input,
        /// one line each, even from a terminal.
        #[arg(long)]
        stdin: bool,
    },
    /// Clear values.
    Clear {
        #[arg(required = true, value_name = "KEY")]
        keys: Vec<String>,
    },
}

pub fn run(out: &Output, command: &PluginCommand) -> anyhow::Result<Exit> {
    let dirs = match super::resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(exit),
    };
    // A test build's manager also reads its crash-test seam
    // (`evoflux_plugins::lifecycle::COMMIT_PAUSE_VAR`); a shipped one has none.
    let manager = PluginManager::new(PluginPaths::from_dirs(&dirs));
    match dispatch(out, &manager, command) {
        Ok(exit) => Ok(exit),
        Err(e) => Ok(report(out, &e)),
    }
}

fn dispatch(
    out: &Output,
    manager: &PluginManager,
    command: &PluginCommand,
) -> Result<Exit, PluginError> {
    match command {
        PluginCommand::Create {
            dest,
            name,
            description,
            skill,
        } => {
            let inspection = manager.create(
                dest,
                &CreateOptions {
                    name: name.clone(),
                    description: description.clone(),
                    version: None,
                    skill: skill.clone(),
                },
            )?;
            out.result(
                &json!({"path": inspection.root, "inspection": inspection}),
                || format!("Created plugin `{name}` at {}\n", inspection.root.display()),
            );
            Ok(Exit::Ok)
        }
        PluginCommand::Inspect { path } => {
            let inspection = manager.inspect(path);
            out.result(&inspection, || render_inspection(&inspection));
            Ok(if inspection.valid {
                Exit::Ok
            } else {
                Exit::Invalid
            })
        }
        PluginCommand::Import { path, dest } => {
            let (report, inspection) = manager.import_claude(path, dest)?;
            out.result(
                &json!({"path": dest, "import": report, "inspection": inspection}),
                || {
                    let mut s = format!(
                        "Imported Claude Code plugin `{}` into {}\n",
                        report.name,
                        dest.display()
                    );
                    render_import(&report, &mut s);
                    s.push_str(&render_inspection(&inspection));
                    s
                },
            );
            Ok(if inspection.valid {
                Exit::Ok
            } else {
                Exit::Invalid
            })
        }
        PluginCommand::Link { path, state } => {
            let n = manager.link(path, state.enabled)?;
            print_new(out, &n, "Linked");
            Ok(Exit::Ok)
        }
        PluginCommand::Pack { path, output } => {
            let r = manager.pack(path, output.clone())?;
            out.result(
                &json!({
                    "path": r.output,
                    "entries": r.entries,
                    "content_sha256": r.content_sha256,
                    "excluded": r.excluded,
                }),
                || render_pack(&r),
            );
            Ok(Exit::Ok)
        }
        PluginCommand::Install { path, state } => {
            let n = manager.install(path, state.enabled)?;
            print_new(out, &n, "Installed");
            Ok(Exit::Ok)
        }
        PluginCommand::Update {
            installation_id,
            path,
            enabled,
        } => {
            let trust = if *enabled {
                UpdateTrust::Enable
            } else {
                UpdateTrust::ReviewAgain
            };
            let u = manager.update(&parse_id(installation_id)?, path, trust)?;
            print_updated(out, &u);
            Ok(Exit::Ok)
        }
        PluginCommand::List => {
            let listing = manager.list();
            out.result(&listing, || render_listing(&listing));
            out.diagnostics(&Diagnostics::from(listing.diagnostics.clone()));
            Ok(Exit::Ok)
        }
        PluginCommand::Show { installation_id } => {
            let d = manager.show(&parse_id(installation_id)?)?;
            out.result(&d, || render_detail(&d));
            Ok(Exit::Ok)
        }
        PluginCommand::Disable { installation_id } => {
            let d = manager.set_enabled(&parse_id(installation_id)?, false)?;
            print_detail(out, &d, "Disabled");
            Ok(Exit::Ok)
        }
        PluginCommand::Enable { installation_id } => {
            let d = manager.set_enabled(&parse_id(installation_id)?, true)?;
            print_detail(out, &d, "Enabled");
            Ok(Exit::Ok)
        }
        PluginCommand::Uninstall {
            installation_id,
            remove_data,
        } => {
            let u = manager.uninstall(&parse_id(installation_id)?, *remove_data)?;
            out.result(&u, || {
                let data = if u.removed_data {
                    "its data was removed".to_owned()
                } else {
                    format!(
                        "its data was kept: installing {} again reattaches it, `evoflux plugin data remove {}` deletes it",
                        u.installation.name, u.installation.name
                    )
                };
                format!(
                    "Uninstalled {} ({}); {data}\n",
                    u.installation.name, u.installation.id
                )
            });
            Ok(Exit::Ok)
        }
        PluginCommand::Data { action } => match action {
            DataAction::List => {
                let listing = manager.kept_data();
                out.result(&listing, || render_kept_data(&listing));
                out.diagnostics(&Diagnostics::from(listing.diagnostics.clone()));
                Ok(Exit::Ok)
            }
            DataAction::Remove { name, id } => {
                let selector = match (name, id) {
                    (_, Some(id)) => DataSelector::Id(parse_id(id)?),
                    (Some(name), None) => DataSelector::Name(name.clone()),
                    // clap requires one of them; never reached.
                    (None, None) => {
                        out.failure(&anyhow::anyhow!("give a plugin name or --id"));
                        return Ok(Exit::Invalid);
                    }
                };
                let removed = manager.remove_kept_data(&selector)?;
                out.result(&json!({"removed": removed}), || {
                    let mut s = String::new();
                    for r in &removed {
                        let _ = writeln!(
                            s,
                            "Removed the kept data of {} ({})",
                            r.name.as_deref().unwrap_or("an unknown plugin"),
                            r.id
                        );
                    }
                    s
                });
                Ok(Exit::Ok)
            }
        },
        PluginCommand::Credentials {
            installation_id,
            action,
        } => {
            let id = parse_id(installation_id)?;
            let state = match action {
                None | Some(CredentialsAction::Show) => manager.credentials(&id)?,
                Some(CredentialsAction::Set { keys, stdin }) => {
                    match set_credentials(out, manager, &id, keys, *stdin)? {
                        Some(state) => state,
                        None => return Ok(Exit::Invalid),
                    }
                }
                Some(CredentialsAction::Clear { keys }) => {
                    let changes = keys
                        .iter()
                        .map(|k| (k.clone(), CredentialChange::Clear))
                        .collect();
                    manager.change_credentials(&id, &changes)?
                }
            };
            out.result(&state, || render_credentials(&state));
            Ok(Exit::Ok)
        }
    }
}

/// `credentials set`: `KEY=VALUE` entries as given, bare `KEY`s read from
/// a prompt or standard input. `None` when reading a value failed (already
/// reported).
fn set_credentials(
    out: &Output,
    manager: &PluginManager,
    id: &InstallationId,
    entries: &[String],
    stdin: bool,
) -> Result<Option<CredentialState>, PluginError> {
    let fields = manager.credential_fields(id)?;
    let plugin = manager.get(id)?.name;
    let field = |key: &str| {
        fields
            .iter()
            .find(|f| f.key == key)
            .ok_or_else(|| PluginError::UnknownCredential {
                plugin: plugin.clone(),
                key: key.to_owned(),
            })
    };
    let mut changes = BTreeMap::new();
    let mut asked = Vec::new();
    let mut warnings = Vec::new();
    for entry in entries {
        let Some((key, value)) = entry.split_once('=') else {
            asked.push(field(entry)?);
            continue;
        };
        if field(key)?.field_type == FieldType::Secret && !value.is_empty() {
            warnings.push(
                Diagnostic::warning(
                    "plugin/credential-secret-in-argv",
                    format!(
                        "the secret `{key}` was given on the command line, where shell history and the process list keep it; give `{key}` alone to be asked for it, or pipe it with --stdin"
                    ),
                )
                .with_field(key.to_owned()),
            );
        }
        changes.insert(key.to_owned(), CredentialChange::SetText(value.to_owned()));
    }
    let values = match credential_input::read_values(ValueSource::choose(stdin), &asked) {
        Ok(values) => values,
        Err(e) => {
            out.diagnostics(&Diagnostics::from(vec![
                Diagnostic::error(e.code(), e.to_string()).with_field(e.key().to_owned()),
            ]));
            return Ok(None);
        }
    };
    for (field, value) in asked.iter().zip(values) {
        changes.insert(field.key.clone(), CredentialChange::SetText(value));
    }
    let state = manager.change_credentials(id, &changes)?;
    out.diagnostics(&Diagnostics::from(warnings));
    Ok(Some(state))
}

fn parse_id(raw: &str) -> Result<InstallationId, PluginError> {
    Ok(raw.parse()?)
}

fn report(out: &Output, e: &PluginError) -> Exit {
    let mut first = e.to_diagnostic();
    // The library says what is wrong; this front end adds its command.
    match e {
        PluginError::NotFound(_) => {
            first
                .message
                .push_str("; `evoflux plugin list` shows the installations");
        }
        PluginError::AlreadyInstalled {
            id, source_type, ..
        } => {
            let hint = match source_type {
                SourceType::Installed | SourceType::Builtin => {
                    format!("; update it instead: `evoflux plugin update {id} <path>`")
                }
                SourceType::Linked => format!(
                    "; a linked plugin changes with its folder: edit it there, or `evoflux plugin uninstall {id}` first"
                ),
            };
            first.message.push_str(&hint);
        }
        PluginError::KeptDataNotFound { .. } => {
            first
                .message
                .push_str("; `evoflux plugin data list` shows the kept data");
        }
        PluginError::DataInUse { id, .. } => {
            first
                .message
                .push_str(&format!(": `evoflux plugin uninstall {id} --remove-data`"));
        }
        _ => {}
    }
    let mut diags = Diagnostics::from(vec![first]);
    diags.extend(e.package_diagnostics().to_diagnostics().into_vec());
    out.diagnostics(&diags);
    if e.is_validation() {
        Exit::Invalid
    } else {
        Exit::Failure
    }
}

/// What of a valid package is unavailable: every component a problem
/// skips (an error in a skill's or server's scope, an escaping link), and
/// the links a copy left out. The rest of the package loads.
fn unavailable_parts(inspection: &PluginInspection, left_out: &[LeftOutLink], s: &mut String) {
    let left_out: Vec<ScopedDiagnostic> = left_out.iter().map(LeftOutLink::diagnostic).collect();
    let parts: Vec<&ScopedDiagnostic> = inspection
        .diagnostics
        .iter()
        .filter(|d| d.diagnostic.severity != evoflux_core::Severity::Info)
        .chain(&left_out)
        .collect();
    if parts.is_empty() {
        return;
    }
    let _ = writeln!(s, "Unavailable parts (the rest of the package loads):");
    for d in parts {
        let _ = writeln!(
            s,
            "  {} [{}] {}",
            d.scope, d.diagnostic.code, d.diagnostic.message
        );
    }
}

fn print_new(out: &Output, n: &NewInstallation, verb: &str) {
    out.result(n, || {
        let mut s = detail_summary(&n.detail, verb);
        if let Some(report) = &n.imported {
            render_import(report, &mut s);
        }
        render_excluded(&n.excluded, &mut s);
        unavailable_parts(&n.detail.inspection, &n.left_out, &mut s);
        if n.reattached_data {
            let _ = writeln!(
                s,
                "Reattached the data an earlier installation of {} kept (PLUGIN_DATA and credentials).",
                n.detail.installation.name
            );
        }
        s
    });
}

fn print_detail(out: &Output, d: &PluginDetail, verb: &str) {
    out.result(d, || detail_summary(d, verb));
}

fn detail_summary(d: &PluginDetail, verb: &str) -> String {
    let i = &d.installation;
    let mut s = format!(
        "{verb} {} {} as {} ({})\n",
        i.name,
        i.version.as_deref().unwrap_or("(unversioned)"),
        i.id,
        if i.enabled { "enabled" } else { "disabled" }
    );
    if !i.enabled {
        let _ = writeln!(
            s,
            "Review it with `evoflux plugin show {}`, then `evoflux plugin enable {}`.",
            i.id, i.id
        );
    }
    s
}

fn render_kept_data(listing: &KeptDataListing) -> String {
    if listing.kept.is_empty() {
        return "No kept plugin data.\n".to_owned();
    }
    let mut s = String::new();
    for k in &listing.kept {
        let _ = writeln!(
            s,
            "{}  {:<24} {:<12} {}  {}",
            k.id,
            k.name.as_deref().unwrap_or("(unknown)"),
            k.version.as_deref().unwrap_or("-"),
            k.kept_at.as_deref().unwrap_or("-"),
            k.path.display()
        );
    }
    s
}

fn render_pack(r: &PackReport) -> String {
    let mut s = format!("Packed {} files into {}\n", r.entries, r.output.display());
    render_excluded(&r.excluded, &mut s);
    s
}

/// What a copy (an archive, an installed copy) left out, one line each.
fn render_excluded(excluded: &[ExcludedEntry], s: &mut String) {
    if !excluded.is_empty() {
        let _ = writeln!(s, "Left out:");
        for e in excluded {
            let _ = writeln!(
                s,
                "  {}{}  ({})",
                e.path,
                if e.folder { "/" } else { "" },
                match e.by {
                    ExcludedBy::Default => format!("secrets file, `{}`", e.pattern),
                    ExcludedBy::IgnoreFile => format!(".evopluginignore `{}`", e.pattern),
                    ExcludedBy::EscapingLink => format!(
                        "symlink to `{}`, outside the plugin root; what reads through it is unavailable",
                        e.pattern
                    ),
                    ExcludedBy::Link => format!(
                        "symlink to `{}`, not a file inside the plugin root; archives hold only files",
                        e.pattern
                    ),
                }
            );
        }
    }
}

fn print_updated(out: &Output, u: &Updated) {
    let i = &u.detail.installation;
    out.result(u, || {
        let mut s = format!(
            "Updated {} {} as {} ({})\n",
            i.name,
            i.version.as_deref().unwrap_or("(unversioned)"),
            i.id,
            if i.enabled { "enabled" } else { "disabled" }
        );
        if let Some(report) = &u.imported {
            render_import(report, &mut s);
        }
        render_excluded(&u.excluded, &mut s);
        unavailable_parts(&u.detail.inspection, &u.left_out, &mut s);
        if !u.trust_change.is_empty() {
            let _ = writeln!(s, "The new version adds to the trust review:");
            render_trust_change(&u.trust_change, &mut s);
        }
        match u.review {
            UpdateReview::Required => {
                let _ = writeln!(
                    s,
                    "It stays disabled until you review it: `evoflux plugin show {}`, then `evoflux plugin enable {}`.",
                    i.id, i.id
                );
            }
            UpdateReview::Disabled => {
                let _ = writeln!(
                    s,
                    "Review it with `evoflux plugin show {}`, then `evoflux plugin enable {}`.",
                    i.id, i.id
                );
            }
            UpdateReview::NothingNew | UpdateReview::EnabledOnRequest => {}
        }
        s
    });
    if u.review == UpdateReview::Required {
        out.diagnostics(&Diagnostics::from(vec![Diagnostic::warning(
            "plugin/update-review-required",
            format!(
                "the new version of `{}` adds {}; it was disabled until you review it (`evoflux plugin show {}`) and enable it again (`evoflux plugin enable {}`)",
                i.name,
                describe_change(&u.trust_change),
                i.id,
                i.id
            ),
        )]));
    }
}

/// `2 commands, 1 host and 1 capability`.
fn describe_change(change: &TrustChange) -> String {
    let parts: Vec<String> = [
        (change.added_commands.len(), "command", "commands"),
        (change.added_hosts.len(), "host", "hosts"),
        (
            change.added_environment_fields.len(),
            "environment name",
            "environment names",
        ),
        (
            change.added_capabilities.len(),
            "capability",
            "capabilities",
        ),
    ]
    .into_iter()
    .filter(|(n, _, _)| *n > 0)
    .map(|(n, one, many)| format!("{n} {}", if n == 1 { one } else { many }))
    .collect();
    match parts.split_last() {
        None => "nothing".to_owned(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

fn render_trust_change(change: &TrustChange, s: &mut String) {
    let lines = ReviewLines {
        commands: &change.added_commands,
        hosts: &change.added_hosts,
        environment: &change.added_environment_fields,
        headers: &[],
        capabilities: &change.added_capabilities,
    };
    lines.render("  + ", s);
}

/// The lines of a trust review or of what an update adds to one: one
/// renderer, so both read alike.
struct ReviewLines<'a> {
    commands: &'a [evoflux_plugins::trust::ExecutableCommand],
    hosts: &'a [evoflux_plugins::trust::RemoteHost],
    environment: &'a [String],
    headers: &'a [evoflux_plugins::trust::HeaderName],
    capabilities: &'a [evoflux_plugins::trust::Capability],
}

impl ReviewLines<'_> {
    fn render(&self, prefix: &str, s: &mut String) {
        for c in self.commands {
            let _ = writeln!(
                s,
                "{prefix}runs        {} {}  [server {}]",
                c.executable,
                c.args.join(" "),
                c.server
            );
        }
        for h in self.hosts {
            let _ = writeln!(
                s,
                "{prefix}connects    {} ({}{})  [server {}]",
                h.host,
                h.transport,
                if h.started { "" } else { ", never started" },
                h.server
            );
        }
        if !self.environment.is_empty() {
            let _ = writeln!(s, "{prefix}env names   {}", self.environment.join(", "));
        }
        for h in self.headers {
            let _ = writeln!(s, "{prefix}header      {}  [server {}]", h.name, h.server);
        }
        for c in self.capabilities {
            let _ = writeln!(s, "{prefix}capability  {}  [{}]", c.name, c.source);
        }
    }
}

fn source_label(t: SourceType) -> &'static str {
    match t {
        SourceType::Installed => "installed",
        SourceType::Linked => "linked",
        SourceType::Builtin => "builtin",
    }
}

fn render_listing(listing: &Listing) -> String {
    if listing.plugins.is_empty() {
        return "No plugins.\n".to_owned();
    }
    let mut s = String::new();
    for p in &listing.plugins {
        let i = &p.installation;
        let _ = writeln!(
            s,
            "{}  {:<24} {:<12} {:<9} {}{}",
            i.id,
            i.name,
            i.version.as_deref().unwrap_or("-"),
            source_label(i.source_type),
            if i.enabled { "enabled" } else { "disabled" },
            if p.credentials.configured {
                ""
            } else {
                "  (credentials needed)"
            }
        );
    }
    s
}

fn render_trust(trust: &TrustReview, s: &mut String) {
    let _ = writeln!(s, "trust review:");
    if trust.is_empty() {
        let _ = writeln!(s, "  nothing to run or reach");
        return;
    }
    let lines = ReviewLines {
        commands: &trust.executable_commands,
        hosts: &trust.remote_hosts,
        environment: &trust.environment_fields,
        headers: &trust.header_names,
        capabilities: &trust.capabilities,
    };
    lines.render("  ", s);
}

/// What the import of a Claude Code plugin carried over and left out.
fn render_import(report: &evoflux_plugins::ImportReport, s: &mut String) {
    let _ = writeln!(
        s,
        "Claude Code plugin {}, read as an Agent Plugins package: {} skill{}, {} MCP server{}",
        report.source.display(),
        report.skills.len(),
        if report.skills.len() == 1 { "" } else { "s" },
        report.servers.len(),
        if report.servers.len() == 1 { "" } else { "s" },
    );
    if !report.credentials.is_empty() {
        let _ = writeln!(
            s,
            "  asks for {} in its credentials form (they were environment variables)",
            report.credentials.join(", ")
        );
    }
    if !report.left_out.is_empty() {
        s.push_str("  not carried over:\n");
        for d in &report.left_out {
            let _ = writeln!(s, "  - {}", d.message);
        }
    }
}

fn render_inspection(i: &PluginInspection) -> String {
    // The package is valid when only components are skipped: say how many,
    // so a 0 exit with warnings is not read as "all fine".
    let skipped = i.skills.iter().filter(|k| !k.valid).count()
        + i.mcp_servers.iter().filter(|m| !m.is_valid()).count()
        + usize::from(i.mcp_status == evoflux_plugins::McpStatus::Disabled);
    let verdict = match (i.valid, skipped) {
        (false, _) => "INVALID: the package itself is refused".to_owned(),
        (true, 0) => "valid".to_owned(),
        (true, n) => format!(
            "valid, with {n} part{} skipped (listed below); the rest loads",
            if n == 1 { "" } else { "s" }
        ),
    };
    let mut s = format!("{} — {verdict}\n", i.root.display());
    if let Some(report) = &i.imported {
        render_import(report, &mut s);
    }
    if i.mcp_status == evoflux_plugins::McpStatus::Disabled {
        s.push_str("  mcp.json is invalid at the top level: none of its servers run\n");
    }
    if let Some(m) = &i.manifest {
        let _ = writeln!(
            s,
            "plugin {} {}",
            m.name,
            m.version.as_deref().unwrap_or("(unversioned)")
        );
    }
    for skill in &i.skills {
        let _ = writeln!(
            s,
            "  skill {:<28} {}",
            skill.dir,
            if skill.valid { "ok" } else { "skipped" }
        );
    }
    for server in &i.mcp_servers {
        let _ = writeln!(
            s,
            "  mcp   {:<28} {}",
            server.name,
            match (&server.server, server.is_startable()) {
                (Some(_), true) => "ok",
                (Some(_), false) => "reported, not started",
                (None, _) => "skipped",
            }
        );
    }
    render_trust(&i.trust, &mut s);
    if !i.diagnostics.is_empty() {
        s.push_str(&i.diagnostics.to_diagnostics().render_human());
    }
    s
}

fn render_detail(d: &PluginDetail) -> String {
    let i = &d.installation;
    let mut s = format!(
        "{} {} ({}, {})\nid       {}\nroot     {}\nsource   {}\n",
        i.name,
        i.version.as_deref().unwrap_or("(unversioned)"),
        source_label(i.source_type),
        if i.enabled { "enabled" } else { "disabled" },
        i.id,
        i.root.display(),
        i.source_ref
    );
    if let Some(desc) = &i.description {
        let _ = writeln!(s, "about    {desc}");
    }
    for skill in d.inspection.valid_skills() {
        let _ = writeln!(s, "skill    {}", skill.dir);
    }
    for server in &d.servers {
        let state = match server.readiness {
            Readiness::Startable => "starts when enabled".to_owned(),
            Readiness::NeedsCredentials => format!(
                "needs-credentials: not started until {} set",
                d.credentials.missing.join(", ")
            ),
            Readiness::NotStarted => "listed, never started (legacy sse)".to_owned(),
            Readiness::Skipped => "skipped (see the diagnostics)".to_owned(),
        };
        let _ = writeln!(s, "mcp      {}  {state}", server.name);
    }
    render_trust(&d.inspection.trust, &mut s);
    if d.credentials.supported {
        s.push_str(&render_credentials(&d.credentials));
    }
    if !d.inspection.diagnostics.is_empty() {
        s.push_str(&d.inspection.diagnostics.to_diagnostics().render_human());
    }
    s
}

fn render_credentials(state: &CredentialState) -> String {
    if !state.supported {
        return "This plugin declares no credentials.\n".to_owned();
    }
    let mut s = format!(
        "credentials: {}\n",
        if state.configured {
            "configured"
        } else {
            "not configured"
        }
    );
    if let Some(e) = &state.error {
        let _ = writeln!(s, "  error: {e}");
    }
    for f in &state.fields {
        let value = match &f.value {
            None => "(not set)".to_owned(),
            Some(CredentialValue::Bool(b)) => b.to_string(),
            Some(CredentialValue::Text(t)) => t.clone(),
        };
        let kind = match f.field_type {
            FieldType::Text => "text",
            FieldType::Secret => "secret",
            FieldType::Url => "url",
            FieldType::Boolean => "boolean",
        };
        let _ = writeln!(
            s,
            "  {:<20} {:<8} {}{}  ({})",
            f.key,
            kind,
            value,
            if f.required { "" } else { "  [optional]" },
            f.env
        );
    }
    s
}
