//! `parse_fleet_contract`: the strict reader of `fleets/<name>.md`.
//!
//! Every problem becomes one diagnostic naming the file and the field
//! (`steps.<id>.<key>`; `steps.<index>` when a step has no usable id), and
//! all of them are reported together. The order is the order a reader
//! needs: version first (it picks the schema), then keys newer than the
//! version (refused by name, before any "unknown key" could hide them),
//! then the schema, then, whenever every step could be read, the graph and
//! the write boundaries.

use std::collections::BTreeSet;
use std::path::Path;

use evoflux_core::{Diagnostic, Diagnostics};
use yaml_serde::{Mapping, Value};

use super::{
    AgentStep, AgentWork, CODE_STEP_MAX_ARG_CHARS, CODE_STEP_MAX_ARGS, CodeStep, CodeWork,
    DEFAULT_PLAN_AGENT, FLEET_DYNAMIC_STEP_VERSION, FLEET_WRITE_BOUNDARY_VERSION, FleetContract,
    FleetStep, FleetVersion, GateStep, LoopCheck, LoopCheckKind, LoopStep, OnFailure,
    PLAN_MAX_TASKS, PLAN_ROSTER_MAX, PlanStep, Route, Scope, StepKind, codes,
    loop_attempts_allowed, loop_attempts_message, validate_fleet_contract,
};
use crate::boundary::{
    BoundaryError, WriteBoundary, normalize_write_boundary, normalize_write_boundary_entry,
};
use crate::graph::codes as graph_codes;
use crate::render::whole_token_placeholder;

/// The first version with `commitFrom`.
const COMMIT_STEP_VERSION: FleetVersion = FleetVersion::V3;

/// Parses and validates one fleet contract read from `path`. Every problem
/// is pushed to `diags`; `None` means the contract is refused as a whole.
pub fn parse_fleet_contract(
    path: &Path,
    text: &str,
    diags: &mut Diagnostics,
) -> Option<FleetContract> {
    let doc = match evoflux_core::frontmatter::parse_file(path, text) {
        Ok(d) => d,
        Err(d) => {
            diags.push(d);
            return None;
        }
    };
    if !doc.has_front_matter {
        diags.push(
            Diagnostic::error(
                codes::FRONTMATTER_MISSING,
                "a fleet contract starts with YAML front matter between `---` lines",
            )
            .with_file(path),
        );
        return None;
    }
    let top = &doc.mapping;
    let version = match top.get("version") {
        Some(Value::Number(n)) => n.as_u64().and_then(FleetVersion::from_number),
        _ => None,
    };
    let Some(version) = version else {
        diags.push(
            Diagnostic::error(
                codes::VERSION_UNSUPPORTED,
                "version must be 1 (agent steps), 2 (adds code steps), 3 (adds bounded loops \
                 and commit steps), 4 (adds enforced write boundaries) or 5 (adds gate and plan \
                 steps, target/profile routing and writers)",
            )
            .with_file(path)
            .with_field("version"),
        );
        return None;
    };
    let mut r = Reader {
        path,
        version,
        diags: Diagnostics::new(),
    };
    let contract = r.contract(top, doc.body);
    let mut refused = r.diags.has_errors();
    diags.extend(r.diags);
    // `None`: a step or a field could not be read at all, so there is no
    // graph to check. Otherwise the graph and the boundaries are checked
    // even when something else was refused (an unknown key, a key newer
    // than the version), so every problem is reported in one pass.
    let contract = contract?;
    let checked = validate_fleet_contract(&contract);
    refused |= checked.has_errors();
    diags.extend(checked);
    (!refused).then_some(contract)
}

struct Reader<'a> {
    path: &'a Path,
    version: FleetVersion,
    diags: Diagnostics,
}

/// `at.key`, or `key` at the top level.
fn field(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_owned()
    } else {
        format!("{at}.{key}")
    }
}

impl Reader<'_> {
    fn err(&mut self, code: &'static str, field: &str, message: impl Into<String>) {
        let d = Diagnostic::error(code, message).with_file(self.path);
        self.diags.push(if field.is_empty() {
            d
        } else {
            d.with_field(field.to_owned())
        });
    }

    /// Checks every key of `m` against what `position` has at this
    /// version: a key the position gains in a later version is refused by
    /// name (the author wrote something an older reader would ignore), any
    /// other unknown key as unknown. `reported` keys were refused already,
    /// with a message of their own.
    fn keys(&mut self, m: &Mapping, at: &str, position: Position, reported: &[&str]) {
        let table = position.keys();
        for k in m.keys() {
            let Some(name) = k.as_str() else {
                self.err(codes::FIELD_INVALID, at, "keys must be strings".to_owned());
                continue;
            };
            if reported.contains(&name) {
                continue;
            }
            match table.iter().find(|(key, _)| *key == name) {
                Some((_, since)) if since.version <= self.version => {}
                Some((_, since)) => {
                    let (since, why) = (since.version, since.before);
                    self.err(
                        codes::KEY_REQUIRES_VERSION,
                        &field(at, name),
                        format!(
                            "'{name}' requires contract version {since}; this contract declares \
                             version {}, {why}",
                            self.version
                        ),
                    );
                }
                None => {
                    let allowed: Vec<&str> = table
                        .iter()
                        .filter(|(_, since)| since.version <= self.version)
                        .map(|(key, _)| *key)
                        .collect();
                    self.err(
                        codes::KEY_UNKNOWN,
                        &field(at, name),
                        format!(
                            "unknown key '{name}' (allowed at version {}: {})",
                            self.version,
                            allowed.join(", ")
                        ),
                    );
                }
            }
        }
    }

    /// Whether a kind first available `since` exists at this version;
    /// refuses it by name when not.
    fn kind_exists(&mut self, at: &str, kind: &str, since: FleetVersion) -> bool {
        if since <= self.version {
            return true;
        }
        self.err(
            codes::KIND_REQUIRES_VERSION,
            &field(at, "kind"),
            format!(
                "kind '{kind}' requires contract version {since}; this contract declares \
                 version {}",
                self.version
            ),
        );
        false
    }

    fn missing(&mut self, at: &str, key: &str) {
        self.err(
            codes::KEY_MISSING,
            &field(at, key),
            format!("'{key}' is required"),
        );
    }

    fn invalid(&mut self, at: &str, key: &str, message: impl Into<String>) {
        self.err(codes::FIELD_INVALID, &field(at, key), message);
    }

    fn string(&mut self, m: &Mapping, at: &str, key: &str) -> Option<String> {
        match m.get(key) {
            None => {
                self.missing(at, key);
                None
            }
            Some(v) => self.string_value(v, at, key),
        }
    }

    fn string_value(&mut self, v: &Value, at: &str, key: &str) -> Option<String> {
        match v {
            Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
            _ => {
                self.invalid(at, key, format!("'{key}' must be a non-empty string"));
                None
            }
        }
    }

    fn opt_string(&mut self, m: &Mapping, at: &str, key: &str) -> Option<Option<String>> {
        match m.get(key) {
            None => Some(None),
            Some(v) => self.string_value(v, at, key).map(Some),
        }
    }

    fn string_list(&mut self, v: &Value, at: &str, key: &str) -> Option<Vec<String>> {
        let Value::Sequence(items) = v else {
            self.invalid(at, key, format!("'{key}' must be a list of strings"));
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            match item {
                Value::String(s) if !s.trim().is_empty() => out.push(s.clone()),
                _ => {
                    self.invalid(at, key, format!("'{key}[{i}]' must be a non-empty string"));
                    ok = false;
                }
            }
        }
        ok.then_some(out)
    }

    fn dependencies(&mut self, m: &Mapping, at: &str) -> Option<Vec<String>> {
        match m.get("dependencies") {
            None => {
                self.missing(at, "dependencies");
                None
            }
            Some(v) => self.string_list(v, at, "dependencies"),
        }
    }

    fn scope(&mut self, m: &Mapping, at: &str) -> Option<Scope> {
        self.word(m, at, "scope", Scope::parse, "'readonly' or 'workspace'")
    }

    /// A required key whose value is one word of a closed set, read into
    /// its enum by `parse`.
    fn word<T>(
        &mut self,
        m: &Mapping,
        at: &str,
        key: &str,
        parse: fn(&str) -> Option<T>,
        expected: &str,
    ) -> Option<T> {
        let Some(v) = m.get(key) else {
            self.missing(at, key);
            return None;
        };
        let word = v.as_str().and_then(parse);
        if word.is_none() {
            self.invalid(at, key, format!("'{key}' must be {expected}"));
        }
        word
    }

    fn integer(&mut self, m: &Mapping, at: &str, key: &str, min: u64, max: u64) -> Option<u32> {
        let Some(v) = m.get(key) else {
            self.missing(at, key);
            return None;
        };
        match v.as_u64().filter(|n| (min..=max).contains(n)) {
            Some(n) => u32::try_from(n).ok(),
            None => {
                let range = if max == u64::from(u32::MAX) {
                    format!("at least {min}")
                } else {
                    format!("from {min} to {max}")
                };
                self.invalid(at, key, format!("'{key}' must be an integer {range}"));
                None
            }
        }
    }

    /// `writes`: absent is `None` (the position declares nothing), present
    /// is the normalized allowlist (possibly empty; the boundary rules
    /// decide whether that is allowed). Below v4 the key was refused by the
    /// version gate and reads as absent.
    fn writes(&mut self, m: &Mapping, at: &str) -> Option<Option<WriteBoundary>> {
        if !self.version.enforces_write_boundaries() {
            return Some(None);
        }
        let Some(v) = m.get("writes") else {
            return Some(None);
        };
        let entries = self.string_list_any(v, at, "writes")?;
        match normalize_write_boundary(&entries) {
            Ok(b) => Some(Some(b)),
            Err(e @ BoundaryError::TooMany(_)) => {
                self.err(codes::WRITES_TOO_MANY, &field(at, "writes"), e.to_string());
                None
            }
            Err(e @ BoundaryError::Entry { .. }) => {
                self.err(codes::WRITES_INVALID, &field(at, "writes"), e.to_string());
                None
            }
        }
    }

    /// A list of strings, empty ones allowed (the boundary grammar names
    /// them precisely).
    fn string_list_any(&mut self, v: &Value, at: &str, key: &str) -> Option<Vec<String>> {
        let Value::Sequence(items) = v else {
            self.invalid(at, key, format!("'{key}' must be a list of strings"));
            return None;
        };
        let out: Option<Vec<String>> = items
            .iter()
            .map(|i| i.as_str().map(str::to_owned))
            .collect();
        if out.is_none() {
            self.invalid(at, key, format!("every '{key}' entry must be a string"));
        }
        out
    }

    /// `target` xor `profile` (v5); below v5 both were refused by the gate.
    fn route(&mut self, m: &Mapping, at: &str, position: &str) -> Option<Option<Route>> {
        if self.version < FLEET_DYNAMIC_STEP_VERSION {
            return Some(None);
        }
        let target = self.opt_string(m, at, "target")?;
        let profile = self.opt_string(m, at, "profile")?;
        match (target, profile) {
            (Some(_), Some(_)) => {
                self.err(
                    codes::ROUTE_CONFLICT,
                    &field(at, "profile"),
                    format!("step '{position}' may declare target or profile, never both"),
                );
                None
            }
            (Some(t), None) => Some(Some(Route::Target(t))),
            (None, Some(p)) => Some(Some(Route::Profile(p))),
            (None, None) => Some(None),
        }
    }

    fn args(&mut self, m: &Mapping, at: &str) -> Option<Vec<String>> {
        let Some(v) = m.get("args") else {
            return Some(Vec::new());
        };
        let args = self.string_list_any(v, at, "args")?;
        if args.len() > CODE_STEP_MAX_ARGS {
            self.err(
                codes::ARGS_INVALID,
                &field(at, "args"),
                format!("at most {CODE_STEP_MAX_ARGS} arguments are allowed"),
            );
            return None;
        }
        let mut ok = true;
        for (i, a) in args.iter().enumerate() {
            let problem = if a.contains('\0') || a.chars().count() > CODE_STEP_MAX_ARG_CHARS {
                Some(format!(
                    "args[{i}]: invalid NUL or oversized argument (at most \
                     {CODE_STEP_MAX_ARG_CHARS} characters)"
                ))
            } else if a.contains("{{") && whole_token_placeholder(a).is_none() {
                Some(format!(
                    "args[{i}] '{a}': placeholders must occupy a whole argument"
                ))
            } else {
                None
            };
            if let Some(p) = problem {
                self.err(codes::ARGS_INVALID, &field(at, "args"), p);
                ok = false;
            }
        }
        ok.then_some(args)
    }

    fn agent_work(
        &mut self,
        m: &Mapping,
        at: &str,
        position: &str,
        agent: Option<String>,
    ) -> Option<AgentWork> {
        let scope = self.scope(m, at);
        let writes = self.writes(m, at);
        let route = self.route(m, at, position);
        Some(AgentWork {
            agent: agent?,
            scope: scope?,
            writes: writes?,
            route: route?,
        })
    }

    fn code_work(&mut self, m: &Mapping, at: &str) -> Option<CodeWork> {
        let command = self.string(m, at, "command");
        let args = self.args(m, at);
        let scope = self.scope(m, at);
        let writes = self.writes(m, at);
        Some(CodeWork {
            command: command?,
            args: args?,
            scope: scope?,
            writes: writes?,
        })
    }

    fn contract(&mut self, top: &Mapping, body: &str) -> Option<FleetContract> {
        self.keys(top, "", Position::Top, &[]);

        let name = self.string(top, "", "name");
        let description = match top.get("description") {
            None => Some(String::new()),
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                self.invalid("", "description", "'description' must be a string");
                None
            }
        };
        let max_workers = self.integer(top, "", "maxWorkers", 1, u64::from(u32::MAX));
        let budget_usd = match top.get("budgetUsd") {
            None => Some(None),
            Some(v) => match v.as_f64().filter(|b| b.is_finite() && *b > 0.0) {
                Some(b) => Some(Some(b)),
                None => {
                    self.invalid("", "budgetUsd", "budgetUsd must be a positive number");
                    None
                }
            },
        };
        let on_failure = self.word(
            top,
            "",
            "onFailure",
            OnFailure::parse,
            "'stop' or 'continue'",
        );
        let single_writer = match top.get("writers") {
            _ if self.version < FLEET_DYNAMIC_STEP_VERSION => Some(false),
            None => Some(false),
            Some(v) if v.as_u64() == Some(1) => Some(true),
            Some(_) => {
                self.invalid("", "writers", "'writers' must be 1 when present");
                None
            }
        };
        let steps = match top.get("steps") {
            None => {
                self.missing("", "steps");
                None
            }
            Some(Value::Sequence(items)) if items.is_empty() => {
                self.invalid("", "steps", "'steps' must declare at least one step");
                None
            }
            Some(Value::Sequence(items)) => {
                let parsed: Vec<Option<FleetStep>> = items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| self.step(i, v))
                    .collect();
                parsed.into_iter().collect::<Option<Vec<_>>>()
            }
            Some(_) => {
                self.invalid("", "steps", "'steps' must be a list of steps");
                None
            }
        };
        let body = body.trim();
        if body.is_empty() {
            self.err(
                codes::BODY_EMPTY,
                "",
                "prompt body is empty: the text after the front matter is every agent step's task",
            );
        }
        Some(FleetContract {
            version: self.version,
            name: name?,
            description: description?,
            steps: steps?,
            max_workers: max_workers?,
            budget_usd: budget_usd?,
            on_failure: on_failure?,
            single_writer: single_writer?,
            body: body.to_owned(),
            path: self.path.to_path_buf(),
        })
    }

    fn step(&mut self, i: usize, v: &Value) -> Option<FleetStep> {
        let Some(m) = v.as_mapping() else {
            self.invalid("steps", &i.to_string(), "each step must be a mapping");
            return None;
        };
        let at = match m.get("id") {
            Some(Value::String(id)) if !id.trim().is_empty() => format!("steps.{id}"),
            _ => format!("steps.{i}"),
        };
        let kind = match m.get("kind") {
            None => StepKind::Agent,
            Some(Value::String(s)) => match StepKind::parse(s) {
                Some(k) => k,
                None => {
                    self.err(
                        codes::KIND_UNKNOWN,
                        &field(&at, "kind"),
                        format!(
                            "unknown step kind '{s}' (known: agent, code, loop, gate, plan); a \
                             reader that does not understand a kind refuses the whole contract \
                             rather than run a partial DAG"
                        ),
                    );
                    return None;
                }
            },
            Some(_) => {
                self.invalid(&at, "kind", "'kind' must be a string");
                return None;
            }
        };
        if !self.kind_exists(&at, kind.as_str(), kind.since()) {
            return None;
        }
        let id = self.string(m, &at, "id");
        match kind {
            StepKind::Agent => {
                self.keys(m, &at, Position::AgentStep, &[]);
                let agent = self.string(m, &at, "agent");
                let deps = self.dependencies(m, &at);
                let position = id.clone().unwrap_or_default();
                let work = self.agent_work(m, &at, &position, agent);
                Some(FleetStep::Agent(AgentStep {
                    id: id?,
                    dependencies: deps?,
                    work: work?,
                }))
            }
            StepKind::Code => {
                self.keys(m, &at, Position::CodeStep, &[]);
                let deps = self.dependencies(m, &at);
                let work = self.code_work(m, &at);
                let commit_from = match m.get("commitFrom") {
                    _ if self.version < COMMIT_STEP_VERSION => Some(None),
                    None => Some(None),
                    Some(v) => match self.string_list(v, &at, "commitFrom") {
                        Some(list) if list.is_empty() => {
                            self.invalid(
                                &at,
                                "commitFrom",
                                "'commitFrom' must name at least one source",
                            );
                            None
                        }
                        Some(list) => Some(Some(list)),
                        None => None,
                    },
                };
                Some(FleetStep::Code(CodeStep {
                    id: id?,
                    dependencies: deps?,
                    work: work?,
                    commit_from: commit_from?,
                }))
            }
            StepKind::Loop => {
                self.keys(m, &at, Position::LoopStep, &[]);
                let max_attempts = match m.get("maxAttempts") {
                    None => {
                        self.missing(&at, "maxAttempts");
                        None
                    }
                    Some(v) => match v.as_u64().filter(|n| loop_attempts_allowed(*n)) {
                        Some(n) => u32::try_from(n).ok(),
                        None => {
                            self.err(
                                graph_codes::LOOP_ATTEMPTS_INVALID,
                                &field(&at, "maxAttempts"),
                                loop_attempts_message(),
                            );
                            None
                        }
                    },
                };
                let deps = self.dependencies(m, &at);
                let loop_id = id.clone().unwrap_or_default();
                let check = self.loop_check(m, &at, &loop_id);
                let repair = self.loop_repair(m, &at, &loop_id);
                Some(FleetStep::Loop(LoopStep {
                    id: id?,
                    max_attempts: max_attempts?,
                    dependencies: deps?,
                    check: check?,
                    repair: repair?,
                }))
            }
            StepKind::Gate => {
                let mut reported = Vec::new();
                if m.contains_key("writes") {
                    self.err(
                        codes::GATE_WRITES,
                        &field(&at, "writes"),
                        format!(
                            "gate step '{}' must not declare 'writes'; its write boundary is \
                             derived from 'path'",
                            id.as_deref().unwrap_or("?")
                        ),
                    );
                    reported.push("writes");
                }
                self.keys(m, &at, Position::GateStep, &reported);
                let agent = self.string(m, &at, "agent");
                let path = self.string(m, &at, "path");
                let run = self.string(m, &at, "run");
                let deps = self.dependencies(m, &at);
                if let Some(s) = m.get("scope")
                    && s.as_str() != Some("workspace")
                {
                    self.invalid(&at, "scope", "a gate's 'scope' can only be 'workspace'");
                }
                let gate_id = id.clone().unwrap_or_default();
                let route = self.route(m, &at, &gate_id);
                let path = path.and_then(|p| self.gate_path(&at, &gate_id, p));
                Some(FleetStep::Gate(GateStep {
                    id: id?,
                    agent: agent?,
                    path: path?,
                    run: run?,
                    dependencies: deps?,
                    route: route?,
                }))
            }
            StepKind::Plan => {
                self.keys(m, &at, Position::PlanStep, &[]);
                let agent = self
                    .opt_string(m, &at, "agent")
                    .map(|a| a.unwrap_or_else(|| DEFAULT_PLAN_AGENT.to_owned()));
                let roster = self.roster(m, &at, id.as_deref().unwrap_or("?"));
                let max_tasks = self.integer(m, &at, "maxTasks", 1, u64::from(PLAN_MAX_TASKS));
                let proposals = match m.get("proposals") {
                    None => Some(false),
                    Some(Value::Bool(b)) => Some(*b),
                    Some(_) => {
                        self.invalid(&at, "proposals", "'proposals' must be true or false");
                        None
                    }
                };
                let deps = self.dependencies(m, &at);
                let position = id.clone().unwrap_or_default();
                let work = self.agent_work(m, &at, &position, agent);
                Some(FleetStep::Plan(PlanStep {
                    id: id?,
                    roster: roster?,
                    max_tasks: max_tasks?,
                    proposals: proposals?,
                    dependencies: deps?,
                    work: work?,
                }))
            }
        }
    }

    fn roster(&mut self, m: &Mapping, at: &str, id: &str) -> Option<Vec<String>> {
        let Some(v) = m.get("roster") else {
            self.missing(at, "roster");
            return None;
        };
        let roster = self.string_list(v, at, "roster")?;
        if roster.is_empty() || roster.len() > PLAN_ROSTER_MAX {
            self.invalid(
                at,
                "roster",
                format!("'roster' must name 1 to {PLAN_ROSTER_MAX} agents"),
            );
            return None;
        }
        let unique: BTreeSet<&String> = roster.iter().collect();
        if unique.len() != roster.len() {
            self.err(
                codes::ROSTER_DUPLICATE,
                &field(at, "roster"),
                format!("plan step '{id}' roster contains duplicate agents"),
            );
            return None;
        }
        Some(roster)
    }

    /// A gate's path is its whole write boundary: exactly one file, already
    /// written the way normalization would write it.
    fn gate_path(&mut self, at: &str, id: &str, path: String) -> Option<String> {
        match normalize_write_boundary_entry(&path) {
            Err(e) => {
                self.err(
                    codes::GATE_PATH_INVALID,
                    &field(at, "path"),
                    format!("gate '{id}' path is invalid: {e}"),
                );
                None
            }
            Ok(n) if n != path || n.ends_with('/') => {
                self.err(
                    codes::GATE_PATH_INVALID,
                    &field(at, "path"),
                    format!(
                        "gate '{id}' path must be one normalized, repository-relative file \
                         (normalized: '{n}')"
                    ),
                );
                None
            }
            Ok(n) => Some(n),
        }
    }

    fn loop_check(&mut self, m: &Mapping, at: &str, loop_id: &str) -> Option<LoopCheck> {
        let Some(v) = m.get("check") else {
            self.missing(at, "check");
            return None;
        };
        let at = field(at, "check");
        let Some(c) = v.as_mapping() else {
            self.err(codes::FIELD_INVALID, &at, "'check' must be a mapping");
            return None;
        };
        let position = super::loop_check_position(loop_id);
        let kind = match c.get("kind").and_then(Value::as_str) {
            Some(s) => match LoopCheckKind::parse(s) {
                Some(k) => k,
                None => {
                    self.err(
                        codes::KIND_UNKNOWN,
                        &field(&at, "kind"),
                        format!(
                            "unknown loop check kind '{s}' (known: code, agent, gate); a reader \
                             that does not understand a kind refuses the whole contract"
                        ),
                    );
                    return None;
                }
            },
            None => {
                self.err(
                    codes::KEY_MISSING,
                    &field(&at, "kind"),
                    "a loop check declares its 'kind': code, agent or (v5) gate",
                );
                return None;
            }
        };
        if !self.kind_exists(&at, kind.as_str(), kind.since()) {
            return None;
        }
        match kind {
            LoopCheckKind::Code => {
                self.keys(c, &at, Position::CodeCheck, &[]);
                self.code_work(c, &at).map(LoopCheck::Code)
            }
            LoopCheckKind::Gate => {
                self.keys(c, &at, Position::GateCheck, &[]);
                self.string(c, &at, "gate")
                    .map(|gate| LoopCheck::Gate { gate })
            }
            LoopCheckKind::Agent => {
                self.keys(c, &at, Position::AgentCheck, &[]);
                let agent = self.string(c, &at, "agent");
                self.agent_work(c, &at, &position, agent)
                    .map(LoopCheck::Agent)
            }
        }
    }

    fn loop_repair(&mut self, m: &Mapping, at: &str, loop_id: &str) -> Option<AgentWork> {
        let Some(v) = m.get("repair") else {
            self.missing(at, "repair");
            return None;
        };
        let at = field(at, "repair");
        let Some(c) = v.as_mapping() else {
            self.err(codes::FIELD_INVALID, &at, "'repair' must be a mapping");
            return None;
        };
        match c.get("kind") {
            None => {}
            Some(k) if k.as_str() == Some("agent") => {}
            Some(_) => {
                self.invalid(&at, "kind", "a loop repair is always an agent: a deterministic repair would just be a check");
                return None;
            }
        }
        self.keys(c, &at, Position::Repair, &[]);
        let agent = self.string(c, &at, "agent");
        self.agent_work(c, &at, &super::loop_repair_position(loop_id), agent)
    }
}

/// The kinds of mapping a contract holds, each with its own keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Position {
    Top,
    AgentStep,
    CodeStep,
    LoopStep,
    GateStep,
    PlanStep,
    CodeCheck,
    AgentCheck,
    GateCheck,
    Repair,
}

impl Position {
    /// Every key the position has in some version, with the first version
    /// that has it: the one statement of the schema's keys, from which both
    /// "unknown key" and "requires version N" are answered. A position that
    /// only exists from some version (a code step from v2) lists its keys
    /// from then; its kind was already checked against the version.
    fn keys(self) -> &'static [(&'static str, Since)] {
        const V1: Since = Since::with_position(FleetVersion::V1);
        const V2: Since = Since::with_position(FleetVersion::V2);
        const V3: Since = Since::with_position(FleetVersion::V3);
        const V5: Since = Since::with_position(FleetVersion::V5);
        match self {
            Position::Top => &[
                ("version", V1),
                ("name", V1),
                ("description", V1),
                ("steps", V1),
                ("maxWorkers", V1),
                ("budgetUsd", V1),
                ("onFailure", V1),
                ("writers", WRITERS),
            ],
            Position::AgentStep => &[
                ("kind", V1),
                ("id", V1),
                ("agent", V1),
                ("scope", V1),
                ("dependencies", V1),
                ("writes", WRITES),
                ("target", ROUTE),
                ("profile", ROUTE),
            ],
            Position::CodeStep => &[
                ("kind", V2),
                ("id", V2),
                ("command", V2),
                ("args", V2),
                ("scope", V2),
                ("dependencies", V2),
                ("commitFrom", COMMIT_FROM),
                ("writes", WRITES),
            ],
            Position::LoopStep => &[
                ("kind", V3),
                ("id", V3),
                ("maxAttempts", V3),
                ("dependencies", V3),
                ("check", V3),
                ("repair", V3),
            ],
            // `writes` is refused on a gate with a message of its own.
            Position::GateStep => &[
                ("kind", V5),
                ("id", V5),
                ("agent", V5),
                ("path", V5),
                ("run", V5),
                ("scope", V5),
                ("dependencies", V5),
                ("target", V5),
                ("profile", V5),
            ],
            Position::PlanStep => &[
                ("kind", V5),
                ("id", V5),
                ("agent", V5),
                ("roster", V5),
                ("maxTasks", V5),
                ("proposals", V5),
                ("scope", V5),
                ("dependencies", V5),
                ("writes", V5),
                ("target", V5),
                ("profile", V5),
            ],
            Position::CodeCheck => &[
                ("kind", V3),
                ("command", V3),
                ("args", V3),
                ("scope", V3),
                ("writes", WRITES),
            ],
            Position::AgentCheck | Position::Repair => &[
                ("kind", V3),
                ("agent", V3),
                ("scope", V3),
                ("writes", WRITES),
                ("target", ROUTE),
                ("profile", ROUTE),
            ],
            Position::GateCheck => &[("kind", V5), ("gate", V5)],
        }
    }
}

/// The first version that has a key, and what a reader of an older version
/// would have done with it: why the key is refused by name there rather
/// than ignored.
#[derive(Debug, Clone, Copy)]
struct Since {
    version: FleetVersion,
    before: &'static str,
}

impl Since {
    /// A key as old as its position: it is never newer than the contract,
    /// because a kind newer than the contract is refused first.
    const fn with_position(version: FleetVersion) -> Since {
        Since {
            version,
            before: "where the position does not exist",
        }
    }
}

const WRITES: Since = Since {
    version: FLEET_WRITE_BOUNDARY_VERSION,
    before: "where the declaration would not be enforced",
};
const ROUTE: Since = Since {
    version: FLEET_DYNAMIC_STEP_VERSION,
    before: "where per-step routing does not exist",
};
const COMMIT_FROM: Since = Since {
    version: COMMIT_STEP_VERSION,
    before: "where commit steps do not exist",
};
const WRITERS: Since = Since {
    version: FLEET_DYNAMIC_STEP_VERSION,
    before: "where the single-writer token does not exist",
};
