//! Schedules: `schedules/<name>.toml` (or `.yaml`, `.json`), a task that
//! starts a session on a cron expression in a time zone or on an
//! interval. Checked strictly at compile, every problem a diagnostic with
//! its file and field; the scheduler in the harness fires them.
//!
//! ```toml
//! cron = "0 9 * * 1-5"        # or: every = "15m"
//! timezone = "Europe/Berlin"  # cron only; default UTC
//! prompt = "Summarize yesterday's commits"
//! mode = "coding"             # work (default) | coding
//! workspace = "."             # coding: the repository (default: this one)
//! lead = "evoflux"            # default: the mode's lead
//! model = "openai:gpt-4o"     # default: the lead's or the config's
//! overlap = "skip"            # skip (default) | queue
//! missed = "run-once"         # run-once (default) | skip
//! enabled = true
//! ```

use std::path::{Path, PathBuf};
use std::str::FromStr;

use chrono::{DateTime, Utc};
use evoflux_core::{AppMode, Diagnostic, Diagnostics};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The shortest interval (`every`) a schedule may have.
pub const MIN_INTERVAL_SECONDS: u64 = 60;
/// The longest prompt a schedule may carry.
pub const MAX_PROMPT_CHARS: usize = 32 * 1024;

/// When a schedule fires. Closed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Trigger {
    /// A five-field cron expression, read in `timezone`'s wall clock.
    Cron {
        expression: String,
        timezone: String,
    },
    /// Every so many seconds.
    Every { seconds: u64 },
    /// Once, at this instant (RFC 3339).
    At { at: String },
}

impl Trigger {
    /// The first occurrence strictly after `after`; `None` when there is
    /// none (a cron expression that never matches again).
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            Trigger::Cron {
                expression,
                timezone,
            } => {
                let cron = croner::Cron::from_str(expression).ok()?;
                let tz: chrono_tz::Tz = timezone.parse().ok()?;
                cron.find_next_occurrence(&after.with_timezone(&tz), false)
                    .ok()
                    .map(|t| t.with_timezone(&Utc))
            }
            Trigger::Every { seconds } => {
                let step = chrono::Duration::seconds(i64::try_from(*seconds).ok()?);
                after.checked_add_signed(step)
            }
            Trigger::At { at } => DateTime::parse_from_rfc3339(at)
                .ok()
                .map(|t| t.with_timezone(&Utc))
                .filter(|t| *t > after),
        }
    }
}

/// How listings word a trigger: `cron 0 9 * * 1-5 (Europe/Berlin)`,
/// `every 900s`, `once at 2026-12-03T09:00:00Z`.
impl std::fmt::Display for Trigger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Trigger::Cron {
                expression,
                timezone,
            } => write!(f, "cron {expression} ({timezone})"),
            Trigger::Every { seconds } => write!(f, "every {seconds}s"),
            Trigger::At { at } => write!(f, "once at {at}"),
        }
    }
}

/// What happens to an occurrence while the previous run still works.
/// Closed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Overlap {
    /// It is recorded as skipped.
    #[default]
    Skip,
    /// It runs when the previous run ends.
    Queue,
}

/// What happens to occurrences that passed while nothing ran the
/// scheduler. Closed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Missed {
    /// The latest one runs once, at start; the others are recorded missed.
    #[default]
    RunOnce,
    /// They are recorded missed; the next one in the future runs.
    Skip,
}

/// A checked schedule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleDefinition {
    pub trigger: Trigger,
    pub prompt: String,
    pub mode: AppMode,
    /// Coding: the repository the session works in (absolute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub overlap: Overlap,
    pub missed: Missed,
    pub enabled: bool,
}

const FIELDS: [&str; 12] = [
    "cron",
    "timezone",
    "every",
    "at",
    "prompt",
    "mode",
    "workspace",
    "lead",
    "model",
    "overlap",
    "missed",
    "enabled",
];

/// Checks one schedule file's value. `home_dir` is the directory a
/// project schedule belongs to (its default and relative `workspace`);
/// `None` for the user's and the admin's schedules, whose `workspace` must
/// be absolute.
pub fn parse(
    path: &Path,
    home_dir: Option<&Path>,
    value: Value,
    diags: &mut Diagnostics,
) -> Option<ScheduleDefinition> {
    let before = diags.count(evoflux_core::Severity::Error);
    let err = |code: &'static str, field: &str, message: String| {
        Diagnostic::error(code, message)
            .with_file(path)
            .with_field(field)
    };
    let Value::Object(map) = value else {
        diags.push(
            Diagnostic::error(
                "schedule/not-a-table",
                "a schedule is a table of fields (cron or every, prompt, …)",
            )
            .with_file(path),
        );
        return None;
    };
    for key in map.keys().filter(|k| !FIELDS.contains(&k.as_str())) {
        diags.push(err(
            "schedule/unknown-field",
            key,
            format!(
                "unknown field `{key}`; a schedule has {}",
                FIELDS.join(", ")
            ),
        ));
    }
    let text = |diags: &mut Diagnostics, field: &str| -> Option<String> {
        match map.get(field) {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                diags.push(err(
                    "schedule/field-type",
                    field,
                    format!("`{field}` must be a string"),
                ));
                None
            }
        }
    };
    let cron = text(diags, "cron");
    let every = text(diags, "every");
    let at = text(diags, "at");
    let timezone = text(diags, "timezone");
    let given = [cron.is_some(), every.is_some(), at.is_some()]
        .iter()
        .filter(|g| **g)
        .count();
    let trigger = match (cron, every, at) {
        _ if given > 1 => {
            diags.push(err(
                "schedule/trigger-ambiguous",
                "every",
                "give one of `cron`, `every` and `at`".into(),
            ));
            None
        }
        (None, None, None) => {
            diags.push(err(
                "schedule/trigger-missing",
                "cron",
                "a schedule needs `cron` (such as \"0 9 * * 1-5\"), `every` (such as \"15m\") \
                 or `at` (such as \"2026-12-03T09:00:00Z\")"
                    .into(),
            ));
            None
        }
        (None, None, Some(at)) => {
            if timezone.is_some() {
                diags.push(err(
                    "schedule/timezone-without-cron",
                    "timezone",
                    "`timezone` applies to `cron` only; `at` carries its own offset".into(),
                ));
            }
            match DateTime::parse_from_rfc3339(&at) {
                Ok(_) => Some(Trigger::At { at }),
                Err(e) => {
                    diags.push(err(
                        "schedule/at-invalid",
                        "at",
                        format!(
                            "`{at}` is not an RFC 3339 time such as 2026-12-03T09:00:00+01:00: {e}"
                        ),
                    ));
                    None
                }
            }
        }
        (Some(expression), _, _) => {
            let timezone = timezone.unwrap_or_else(|| "UTC".to_owned());
            let mut ok = true;
            if expression.split_whitespace().count() != 5 {
                ok = false;
                diags.push(err(
                    "schedule/cron-invalid",
                    "cron",
                    format!(
                        "`{expression}` must have five fields: minute hour day-of-month month \
                         day-of-week"
                    ),
                ));
            } else if let Err(e) = croner::Cron::from_str(&expression) {
                ok = false;
                diags.push(err(
                    "schedule/cron-invalid",
                    "cron",
                    format!("`{expression}` is not a cron expression: {e}"),
                ));
            }
            if timezone.parse::<chrono_tz::Tz>().is_err() {
                ok = false;
                diags.push(err(
                    "schedule/timezone-unknown",
                    "timezone",
                    format!(
                        "`{timezone}` is not a time zone: use an IANA name such as \
                         \"Europe/Berlin\" or \"UTC\""
                    ),
                ));
            }
            ok.then_some(Trigger::Cron {
                expression,
                timezone,
            })
        }
        (None, Some(every), _) => {
            if timezone.is_some() {
                diags.push(err(
                    "schedule/timezone-without-cron",
                    "timezone",
                    "`timezone` applies to `cron` only; an interval has none".into(),
                ));
            }
            match parse_interval(&every) {
                Some(seconds) if seconds >= MIN_INTERVAL_SECONDS => {
                    Some(Trigger::Every { seconds })
                }
                Some(_) => {
                    diags.push(err(
                        "schedule/every-invalid",
                        "every",
                        format!("`{every}` is shorter than the least interval, one minute"),
                    ));
                    None
                }
                None => {
                    diags.push(err(
                        "schedule/every-invalid",
                        "every",
                        format!(
                            "`{every}` is not an interval: a number and a unit s, m, h or d \
                             (such as \"90s\", \"15m\", \"2h\", \"1d\")"
                        ),
                    ));
                    None
                }
            }
        }
    };
    let prompt = match text(diags, "prompt") {
        Some(p) if p.trim().is_empty() => {
            diags.push(err(
                "schedule/prompt-missing",
                "prompt",
                "`prompt` is empty: say what the session should do".into(),
            ));
            None
        }
        Some(p) if p.chars().count() > MAX_PROMPT_CHARS => {
            diags.push(err(
                "schedule/prompt-too-long",
                "prompt",
                format!("`prompt` is longer than {MAX_PROMPT_CHARS} characters"),
            ));
            None
        }
        Some(p) => Some(p),
        None => {
            if !map.contains_key("prompt") {
                diags.push(err(
                    "schedule/prompt-missing",
                    "prompt",
                    "a schedule needs `prompt`: what the session should do".into(),
                ));
            }
            None
        }
    };
    let named = text(diags, "workspace");
    let requested = match text(diags, "mode").as_deref() {
        None => None,
        Some("work") => Some(AppMode::Work),
        Some("coding") => Some(AppMode::Coding),
        Some(other) => {
            diags.push(err(
                "schedule/mode-invalid",
                "mode",
                format!("`{other}` is not a mode: work or coding"),
            ));
            Some(AppMode::Work)
        }
    };
    let mode = AppMode::for_new_session(requested, named.is_some());
    let workspace = match (mode, named) {
        (AppMode::Work, Some(_)) => {
            diags.push(err(
                "schedule/workspace-in-work-mode",
                "workspace",
                "a Work session works in its own folder; leave out `mode` (a workspace makes \
                 a Coding schedule) or leave out `workspace`"
                    .into(),
            ));
            None
        }
        (AppMode::Work, None) => None,
        (AppMode::Coding, Some(w)) => {
            let p = PathBuf::from(&w);
            match (p.is_absolute(), home_dir) {
                (true, _) => Some(p),
                (false, Some(home)) => Some(home.join(p)),
                (false, None) => {
                    diags.push(err(
                        "schedule/workspace-relative",
                        "workspace",
                        format!("`{w}` is relative; your own schedules name an absolute path"),
                    ));
                    None
                }
            }
        }
        (AppMode::Coding, None) => match home_dir {
            Some(home) => Some(home.to_path_buf()),
            None => {
                diags.push(err(
                    "schedule/workspace-missing",
                    "workspace",
                    "a Coding schedule of your own names the repository it works in".into(),
                ));
                None
            }
        },
    };
    let lead = text(diags, "lead");
    let model = text(diags, "model");
    if let Some(m) = &model
        && let Err(e) = m.parse::<evoflux_core::config::ModelRef>()
    {
        diags.push(err(
            "schedule/model-invalid",
            "model",
            format!("`{m}` is not a model: {e}"),
        ));
    }
    let choice = |diags: &mut Diagnostics, field: &str, options: [&str; 2]| -> usize {
        match text(diags, field) {
            None => 0,
            Some(v) => options.iter().position(|o| *o == v).unwrap_or_else(|| {
                diags.push(err(
                    "schedule/choice-invalid",
                    field,
                    format!("`{v}` is not one of {}", options.join(", ")),
                ));
                0
            }),
        }
    };
    let overlap = [Overlap::Skip, Overlap::Queue][choice(diags, "overlap", ["skip", "queue"])];
    let missed = [Missed::RunOnce, Missed::Skip][choice(diags, "missed", ["run-once", "skip"])];
    let enabled = match map.get("enabled") {
        None => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            diags.push(err(
                "schedule/field-type",
                "enabled",
                "`enabled` must be true or false".into(),
            ));
            true
        }
    };
    if diags.count(evoflux_core::Severity::Error) > before {
        return None;
    }
    Some(ScheduleDefinition {
        trigger: trigger?,
        prompt: prompt?,
        mode,
        workspace,
        lead,
        model,
        overlap,
        missed,
        enabled,
    })
}

/// `90s`, `15m`, `2h`, `1d` in seconds.
pub fn parse_interval(text: &str) -> Option<u64> {
    let text = text.trim();
    let unit = text.chars().last()?;
    let number: u64 = text[..text.len() - unit.len_utf8()].trim().parse().ok()?;
    let scale = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        _ => return None,
    };
    number.checked_mul(scale)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(v: Value) -> (Option<ScheduleDefinition>, Vec<String>) {
        check_in(v, Some(Path::new("/repo")))
    }

    fn check_in(v: Value, home: Option<&Path>) -> (Option<ScheduleDefinition>, Vec<String>) {
        let mut d = Diagnostics::new();
        let s = parse(
            Path::new("/repo/.evoflux/schedules/x.toml"),
            home,
            v,
            &mut d,
        );
        (s, d.codes().into_iter().map(str::to_owned).collect())
    }

    #[test]
    fn a_full_schedule_reads_every_field() {
        let (s, codes) = check(json!({
            "cron": "0 9 * * 1-5", "timezone": "Europe/Berlin", "prompt": "Summarize",
            "mode": "coding", "workspace": "sub", "lead": "evoflux", "model": "openai:gpt-4o",
            "overlap": "queue", "missed": "skip", "enabled": false
        }));
        assert!(codes.is_empty(), "{codes:?}");
        let s = s.unwrap();
        assert_eq!(s.workspace.as_deref(), Some(Path::new("/repo/sub")));
        assert_eq!(s.overlap, Overlap::Queue);
        assert_eq!(s.missed, Missed::Skip);
        assert!(!s.enabled);
        let (s, codes) = check(json!({"every": "15m", "prompt": "p"}));
        assert!(codes.is_empty(), "{codes:?}");
        let s = s.unwrap();
        assert_eq!(s.trigger, Trigger::Every { seconds: 900 });
        assert_eq!(
            (s.mode, s.overlap, s.missed),
            (AppMode::Work, Overlap::Skip, Missed::RunOnce)
        );
    }

    /// A schedule that names a workspace without a mode is a Coding one,
    /// as a session opened with a workspace is.
    #[test]
    fn a_workspace_without_a_mode_makes_a_coding_schedule() {
        let (s, codes) = check(json!({"every": "1h", "prompt": "p", "workspace": "/r"}));
        assert!(codes.is_empty(), "{codes:?}");
        let s = s.unwrap();
        assert_eq!(s.mode, AppMode::Coding);
        assert_eq!(s.workspace.as_deref(), Some(Path::new("/r")));
    }

    #[test]
    fn every_field_error_has_its_code() {
        for (v, code) in [
            (json!({"prompt": "p"}), "schedule/trigger-missing"),
            (
                json!({"cron": "* * * * *", "every": "1h", "prompt": "p"}),
                "schedule/trigger-ambiguous",
            ),
            (
                json!({"cron": "61 * * * *", "prompt": "p"}),
                "schedule/cron-invalid",
            ),
            (
                json!({"cron": "* * * *", "prompt": "p"}),
                "schedule/cron-invalid",
            ),
            (
                json!({"cron": "* * * * *", "timezone": "Mars/Olympus", "prompt": "p"}),
                "schedule/timezone-unknown",
            ),
            (
                json!({"every": "1h", "timezone": "UTC", "prompt": "p"}),
                "schedule/timezone-without-cron",
            ),
            (
                json!({"every": "10s", "prompt": "p"}),
                "schedule/every-invalid",
            ),
            (
                json!({"every": "soon", "prompt": "p"}),
                "schedule/every-invalid",
            ),
            (json!({"every": "1h"}), "schedule/prompt-missing"),
            (
                json!({"every": "1h", "prompt": "  "}),
                "schedule/prompt-missing",
            ),
            (
                json!({"every": "1h", "prompt": "p", "mode": "play"}),
                "schedule/mode-invalid",
            ),
            (
                json!({"every": "1h", "prompt": "p", "mode": "work", "workspace": "/r"}),
                "schedule/workspace-in-work-mode",
            ),
            (
                json!({"every": "1h", "prompt": "p", "model": "nocolon"}),
                "schedule/model-invalid",
            ),
            (
                json!({"every": "1h", "prompt": "p", "overlap": "both"}),
                "schedule/choice-invalid",
            ),
            (
                json!({"every": "1h", "prompt": "p", "missed": "all"}),
                "schedule/choice-invalid",
            ),
            (
                json!({"every": "1h", "prompt": "p", "enabled": "yes"}),
                "schedule/field-type",
            ),
            (json!({"every": 5, "prompt": "p"}), "schedule/field-type"),
            (
                json!({"every": "1h", "prompt": "p", "when": "now"}),
                "schedule/unknown-field",
            ),
            (json!(["not", "a", "table"]), "schedule/not-a-table"),
            (
                json!({"at": "tomorrow", "prompt": "p"}),
                "schedule/at-invalid",
            ),
            (
                json!({"at": "2026-12-03T09:00:00Z", "every": "1h", "prompt": "p"}),
                "schedule/trigger-ambiguous",
            ),
        ] {
            let (s, codes) = check(v.clone());
            assert!(s.is_none(), "{v}");
            assert!(codes.contains(&code.to_owned()), "{v}: {codes:?}");
        }
        // Your own schedules name an absolute repository.
        let (_, codes) = check_in(
            json!({"every": "1h", "prompt": "p", "mode": "coding"}),
            None,
        );
        assert_eq!(codes, ["schedule/workspace-missing"]);
        let (_, codes) = check_in(
            json!({"every": "1h", "prompt": "p", "mode": "coding", "workspace": "rel"}),
            None,
        );
        assert_eq!(codes, ["schedule/workspace-relative"]);
    }

    #[test]
    fn triggers_give_their_next_occurrence() {
        let t = DateTime::parse_from_rfc3339("2026-03-27T08:30:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let cron = Trigger::Cron {
            expression: "0 9 * * *".into(),
            timezone: "Europe/Berlin".into(),
        };
        // 09:00 in Berlin is 08:00 UTC in winter time…
        let next = cron.next_after(t).unwrap();
        assert_eq!(next.to_rfc3339(), "2026-03-28T08:00:00+00:00");
        // …and 07:00 UTC after the switch to summer time (29 March).
        let after = cron.next_after(next).unwrap();
        assert_eq!(after.to_rfc3339(), "2026-03-29T07:00:00+00:00");
        let every = Trigger::Every { seconds: 90 };
        assert_eq!(
            every.next_after(t).unwrap().to_rfc3339(),
            "2026-03-27T08:31:30+00:00"
        );
        let once = Trigger::At {
            at: "2026-03-27T10:00:00+01:00".into(),
        };
        assert_eq!(
            once.next_after(t).unwrap().to_rfc3339(),
            "2026-03-27T09:00:00+00:00"
        );
        assert_eq!(
            once.next_after(once.next_after(t).unwrap()),
            None,
            "once only"
        );
        assert_eq!(parse_interval("2h"), Some(7200));
        assert_eq!(parse_interval("1d"), Some(86_400));
        assert_eq!(parse_interval("h"), None);
    }
}
