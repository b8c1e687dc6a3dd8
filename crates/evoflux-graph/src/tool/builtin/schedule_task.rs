//! `schedule_task`: the lead schedules a task for later, lists or cancels
//! the schedules sessions made.
//!
//! Its handler (when the session can run it, how a call is approved, run
//! and counted as evidence) is `evoflux-harness/src/tools/schedule_task.rs`,
//! of the same name.

use serde_json::json;

use super::{Framework, Spec, object, string};
use crate::tool::{ActionClass, Availability, BuiltinExecutor};

pub(super) const TOOL: Framework = Framework {
    name: "schedule_task",
    spec,
};

fn spec() -> Spec {
    Spec {
        lead_only: true,
        availability: &[Availability::RootSession],
        ..Spec::ordinary(
            BuiltinExecutor::ScheduleTask,
            ActionClass::Execute,
            "Schedule a task for later, once (`at`) or repeatedly (`cron` with a `timezone`, or `every`), as a new session with `prompt`; list the schedules you made; cancel one. The user approves each call; `evoflux schedule list` shows them.",
            object(
                json!({
                    "action": {"type": "string", "enum": ["create", "list", "cancel"]},
                    "name": string("The schedule's name: letters, digits, `.`, `_` and `-` (create, cancel)."),
                    "prompt": string("What the scheduled session should do (create)."),
                    "at": string("One run at this RFC 3339 time, such as 2026-12-03T09:00:00+01:00."),
                    "cron": string("Five cron fields, such as `0 9 * * 1-5`."),
                    "timezone": string("The cron's IANA time zone (default UTC)."),
                    "every": string("An interval such as `30m`, `2h`, `1d` (at least one minute)."),
                    "mode": {"type": "string", "enum": ["work", "coding"]},
                    "workspace": string("Coding: the absolute path of the repository to work in.")
                }),
                &["action"],
            ),
        )
    }
}
