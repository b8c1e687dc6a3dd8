#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The command runtime end to end: real shells, real process groups,
//! artifacts in temp dirs. No assertion depends on timing; generous
//! timeouts only keep a broken build from hanging.

use std::ffi::OsString;
use std::fs;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use evoflux_core::ids::{Ids, SessionId};
use evoflux_graph::tool::{Approval, CommandTool};
use evoflux_tools::{
    CommandMeta, CommandStatus, ProcessRuntime, RuntimeConfig, SUCCESS_OUTPUT_LIMIT, ShellRequest,
    ToolError, ToolOutput, Workspace,
};
use serde_json::{Value, json};
use tempfile::TempDir;

struct Fixture {
    _dir: TempDir,
    root: PathBuf,
    ws: Workspace,
    rt: ProcessRuntime,
    ids: Ids,
    session: SessionId,
}

fn parent_env(home: &Path) -> Vec<(OsString, OsString)> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    vec![
        ("PATH".into(), path),
        ("HOME".into(), home.into()),
        ("SHELL".into(), "/bin/sh".into()),
        ("LANG".into(), "C.UTF-8".into()),
        ("LC_ALL".into(), "C.UTF-8".into()),
        ("EVOFLUX_SECRET".into(), "evoflux-secret-value".into()),
        ("OPENAI_API_KEY".into(), "sk-should-not-leak".into()),
        ("DEPLOY_TOKEN".into(), "declared-token".into()),
    ]
}

fn fixture_with(adjust: impl FnOnce(&mut RuntimeConfig)) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    fs::create_dir_all(&root).unwrap();
    let artifacts = dir.path().join("data/artifacts");
    let ids = Ids::sequential();
    let mut config = RuntimeConfig::new(&artifacts);
    config.parent_env = parent_env(dir.path());
    config.terminate_grace = Duration::from_secs(1);
    config.exit_drain = Duration::from_millis(300);
    config.ids = ids.clone();
    adjust(&mut config);
    let ws = Workspace::new([&root]).unwrap();
    let session = ids.session_id();
    Fixture {
        _dir: dir,
        root,
        ws,
        rt: ProcessRuntime::new(config),
        ids,
        session,
    }
}

fn fixture() -> Fixture {
    fixture_with(|_| {})
}

/// Fails the test instead of hanging it.
async fn within<T>(fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(90), fut)
        .await
        .expect("test step did not finish within 90 s")
}

impl Fixture {
    async fn shell(&self, input: Value) -> ToolOutput {
        within(self.rt.shell(self.session, &self.ws, &input))
            .await
            .unwrap()
    }

    async fn process(&self, session: SessionId, input: Value) -> Result<ToolOutput, ToolError> {
        within(self.rt.process(session, &input)).await
    }
}

fn meta(out: &ToolOutput) -> &CommandMeta {
    out.meta.as_ref().expect("command results carry metadata")
}

/// The output bytes an observation shows, cut out of its text.
fn delta(out: &ToolOutput) -> String {
    let m = meta(out);
    assert_eq!(m.omitted_bytes, 0, "delta() needs unclipped observations");
    if m.output_bytes == 0 {
        return String::new();
    }
    let text = out.text.as_str();
    let body = match text.find("\nInitial output:\n") {
        Some(at) => &text[at + "\nInitial output:\n".len()..],
        None => &text[text.find("\n\n").unwrap() + 2..],
    };
    let body = match body.find("\n\nStill running.") {
        Some(at) => &body[..at],
        None => body,
    };
    match text.contains("\nInitial output:\n") {
        // The yield form ends its output block with one extra newline.
        true => body.strip_suffix('\n').unwrap().to_owned(),
        false => body.to_owned(),
    }
}

fn gone(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // A killed process whose parent never reaps it stays a zombie.
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

async fn eventually_gone(pid: u32) -> bool {
    for _ in 0..500 {
        if gone(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    gone(pid)
}

// ---- completed commands ----

#[tokio::test]
async fn fast_success_is_one_bounded_observation_with_metadata() {
    let f = fixture();
    let out = f.shell(json!({"command": "echo hello"})).await;
    assert!(
        out.text.starts_with("[Succeeded]\nduration: "),
        "{}",
        out.text
    );
    assert!(out.text.ends_with("\n\nhello\n"), "{}", out.text);
    assert!(!out.is_error);
    let m = meta(&out);
    assert_eq!(m.status, CommandStatus::Succeeded);
    assert_eq!(m.exit_code, Some(0));
    assert!(m.process_id.starts_with("proc_") && m.process_id.len() == 15);
    assert_ne!(m.process_id, m.pid.to_string());
    assert_eq!((m.output_offset, m.output_bytes), (0, 6));
    assert_eq!((m.shown_bytes, m.omitted_bytes), (6, 0));
    assert_eq!(fs::read(&m.artifact).unwrap(), b"hello\n");
    assert!(
        m.artifact.starts_with(
            f._dir
                .path()
                .join("data/artifacts")
                .join(f.session.to_string())
        )
    );
    // Completed within its yield: nothing left for `process`.
    assert!(!f.rt.has_processes(f.session));

    let json = serde_json::to_value(m).unwrap();
    for key in [
        "process_id",
        "pid",
        "status",
        "exit_code",
        "duration_ms",
        "artifact",
        "output_bytes",
        "shown_bytes",
        "omitted_bytes",
    ] {
        assert!(json.get(key).is_some(), "{key} missing from {json}");
    }
    assert_eq!(json["status"], "succeeded");
}

#[tokio::test]
async fn failure_reports_the_exit_code_and_merged_stderr() {
    let f = fixture();
    let out = f
        .shell(json!({"command": "echo out; echo oops >&2; exit 3"}))
        .await;
    assert!(
        out.text.starts_with("[Failed — exit code 3]\n"),
        "{}",
        out.text
    );
    assert!(out.text.ends_with("out\noops\n"), "{}", out.text);
    assert!(out.is_error);
    assert_eq!(meta(&out).status, CommandStatus::Failed);
    assert_eq!(meta(&out).exit_code, Some(3));
}

#[tokio::test]
async fn empty_output_and_closed_stdin() {
    let f = fixture();
    // `read` on /dev/null fails at once instead of waiting for input.
    let out = f.shell(json!({"command": "read line; echo rc=$?"})).await;
    assert!(out.text.ends_with("rc=1\n"), "{}", out.text);
    let out = f.shell(json!({"command": "true"})).await;
    assert!(out.text.ends_with("\n\n(No output)"), "{}", out.text);
    let out = f.shell(json!({"command": "   "})).await;
    assert_eq!(out.text, "[Succeeded]\n\n(No output)");
}

#[tokio::test]
async fn timeout_kills_the_group_and_says_so() {
    let f = fixture();
    let out = f
        .shell(json!({"command": "echo before; sleep 60", "timeout_seconds": 1}))
        .await;
    assert!(out.text.starts_with("[Timed out]\n"), "{}", out.text);
    assert!(out.text.contains("before"), "{}", out.text);
    assert!(out.is_error);
    assert_eq!(meta(&out).status, CommandStatus::TimedOut);
    assert_eq!(meta(&out).exit_code, None);
}

#[tokio::test]
async fn timeout_is_capped_by_the_runtime_maximum() {
    let f = fixture_with(|c| c.max_timeout = Duration::from_secs(1));
    let out = f
        .shell(json!({"command": "sleep 60", "timeout_seconds": 500}))
        .await;
    assert_eq!(meta(&out).status, CommandStatus::TimedOut, "{}", out.text);
}

#[tokio::test]
async fn megabytes_of_output_stay_bounded_and_the_artifact_is_exact() {
    let f = fixture();
    let out = f
        .shell(json!({"command": "seq 1 500000", "yield_time_ms": 30000}))
        .await;
    let expected: String = (1..=500_000).map(|i| format!("{i}\n")).collect();
    let m = meta(&out);
    assert_eq!(m.status, CommandStatus::Succeeded, "{}", out.text);
    assert_eq!(m.output_bytes, expected.len() as u64);
    assert_eq!(m.shown_bytes + m.omitted_bytes, m.output_bytes);
    assert!(m.shown_bytes <= SUCCESS_OUTPUT_LIMIT as u64);
    assert!(
        out.text.len() < SUCCESS_OUTPUT_LIMIT + 400,
        "{}",
        out.text.len()
    );
    assert!(out.text.contains("\n\n1\n2\n3\n"));
    assert!(
        out.text
            .contains(&format!("\n... {} bytes omitted ...\n", m.omitted_bytes))
    );
    assert!(out.text.contains("499999\n500000\n"));
    assert!(out.text.ends_with(&format!(
        "Full output: {} ({} bytes)",
        evoflux_tools::artifact_locator(&m.artifact),
        expected.len()
    )));
    assert_eq!(fs::read_to_string(&m.artifact).unwrap(), expected);
}

#[tokio::test]
async fn random_megabytes_are_journalled_byte_for_byte() {
    let f = fixture();
    let out = f
        .shell(json!({
            "command": "head -c 3000000 /dev/urandom > blob; cat blob",
            "yield_time_ms": 30000
        }))
        .await;
    let m = meta(&out);
    assert_eq!(m.status, CommandStatus::Succeeded, "{}", out.text);
    let blob = fs::read(f.root.join("blob")).unwrap();
    assert_eq!(fs::read(&m.artifact).unwrap(), blob);
    assert_eq!(m.output_bytes, 3_000_000);
    // Binary shows lossily, never more than the limit in raw bytes.
    assert!(m.shown_bytes <= SUCCESS_OUTPUT_LIMIT as u64);
}

#[tokio::test]
async fn binary_and_invalid_utf8_show_lossily() {
    let f = fixture();
    let out = f
        .shell(json!({"command": r"printf '\377\376abc\000def\200 caf\303\251'"}))
        .await;
    assert_eq!(meta(&out).status, CommandStatus::Succeeded);
    assert!(out.text.contains('\u{fffd}'));
    assert!(out.text.contains("abc\0def"));
    assert!(out.text.ends_with(" café"), "{:?}", out.text);
    assert_eq!(
        fs::read(&meta(&out).artifact).unwrap(),
        b"\xff\xfeabc\0def\x80 caf\xc3\xa9"
    );
}

#[tokio::test]
async fn workdir_must_be_a_directory_inside_the_workspace() {
    let f = fixture();
    fs::create_dir_all(f.root.join("sub")).unwrap();
    fs::write(f.root.join("file.txt"), "x").unwrap();
    let out = f.shell(json!({"command": "pwd", "workdir": "sub"})).await;
    assert!(out.text.ends_with("/ws/sub\n"), "{}", out.text);
    let out = f.shell(json!({"command": "pwd"})).await;
    assert!(out.text.ends_with("/ws\n"), "{}", out.text);
    for (workdir, code) in [
        ("..", "tool/outside-workspace"),
        ("file.txt", "tool/wrong-kind"),
        ("missing", "tool/not-found"),
    ] {
        let err = within(f.rt.shell(
            f.session,
            &f.ws,
            &json!({"command": "pwd", "workdir": workdir}),
        ))
        .await
        .unwrap_err();
        assert_eq!(err.code(), code, "{workdir}");
    }
}

#[tokio::test]
async fn environment_is_an_allowlist_without_evoflux_or_keys() {
    let f = fixture();
    let out = f.shell(json!({"command": "env"})).await;
    assert!(out.text.contains("\nHOME="), "{}", out.text);
    assert!(out.text.contains("LC_ALL=C.UTF-8"), "{}", out.text);
    assert!(!out.text.contains("EVOFLUX_SECRET"), "{}", out.text);
    assert!(!out.text.contains("evoflux-secret-value"));
    assert!(!out.text.contains("OPENAI_API_KEY"));
    assert!(!out.text.contains("DEPLOY_TOKEN"));
}

// ---- continuation ----

#[tokio::test]
async fn a_long_command_yields_then_wait_returns_the_rest() {
    let f = fixture();
    let first = f
        .shell(json!({"command": "echo start; sleep 1; echo done", "yield_time_ms": 250}))
        .await;
    let m = meta(&first).clone();
    assert_eq!(m.status, CommandStatus::Running, "{}", first.text);
    assert!(first.text.starts_with("[Running]\n"));
    assert!(
        first
            .text
            .contains(&format!("process_id: {}\n", m.process_id))
    );
    assert!(first.text.contains(&format!("pid: {}\n", m.pid)));
    assert!(
        first
            .text
            .contains("command: echo start; sleep 1; echo done\n")
    );
    assert!(first.text.contains("process(action='poll'"));
    assert!(!first.is_error);
    assert!(f.rt.has_processes(f.session));

    let list = f
        .process(f.session, json!({"action": "list"}))
        .await
        .unwrap();
    assert!(
        list.text.starts_with(&format!(
            "{}  running  pid={}  echo start",
            m.process_id, m.pid
        )),
        "{}",
        list.text
    );

    let done = f
        .process(
            f.session,
            json!({"action": "wait", "process_id": m.process_id, "wait_seconds": 60}),
        )
        .await
        .unwrap();
    assert!(
        done.text.starts_with("[Succeeded]\nprocess_id: "),
        "{}",
        done.text
    );
    assert_eq!(meta(&done).status, CommandStatus::Succeeded);
    assert_eq!(meta(&done).exit_code, Some(0));
    assert_eq!(
        format!("{}{}", delta(&first), delta(&done)),
        "start\ndone\n"
    );
    assert_eq!(
        meta(&done).output_offset,
        meta(&first).output_offset + meta(&first).output_bytes
    );
    // The observation that saw the end forgot the command.
    assert!(!f.rt.has_processes(f.session));
    let err = f
        .process(
            f.session,
            json!({"action": "poll", "process_id": m.process_id}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "tool/process-not-found");
}

#[tokio::test]
async fn poll_returns_at_once_and_terminate_stops_the_group() {
    let f = fixture();
    let first = f
        .shell(json!({"command": "sleep 1000 & echo child=$!; wait", "yield_time_ms": 250}))
        .await;
    let id = meta(&first).process_id.clone();
    assert_eq!(meta(&first).status, CommandStatus::Running);
    let poll = f
        .process(f.session, json!({"action": "poll", "process_id": id}))
        .await
        .unwrap();
    assert_eq!(meta(&poll).status, CommandStatus::Running);
    assert!(poll.text.starts_with("[Running]\n"), "{}", poll.text);
    // The shell's `echo` may land in either observation; together, once.
    let seen = format!("{}{}", delta(&first), delta(&poll));
    let child_pid: Option<u32> = seen
        .strip_prefix("child=")
        .and_then(|s| s.trim().parse().ok());

    let stopped = f
        .process(f.session, json!({"action": "terminate", "process_id": id}))
        .await
        .unwrap();
    assert!(
        stopped.text.starts_with("[Terminated]\n"),
        "{}",
        stopped.text
    );
    assert_eq!(meta(&stopped).status, CommandStatus::Terminated);
    assert!(!stopped.is_error);
    assert!(eventually_gone(meta(&first).pid).await);
    let all = format!("{seen}{}", delta(&stopped));
    let child_pid = child_pid.or_else(|| {
        all.strip_prefix("child=")
            .and_then(|s| s.trim().parse().ok())
    });
    let child_pid = child_pid.expect("the shell printed its child's pid");
    assert!(
        eventually_gone(child_pid).await,
        "background child {child_pid} survived"
    );
    assert_eq!(all, fs::read_to_string(&meta(&first).artifact).unwrap());
    assert!(!f.rt.has_processes(f.session));
}

#[tokio::test]
async fn a_poll_sequence_sees_every_byte_exactly_once() {
    let f = fixture();
    let first = f
        .shell(json!({
            "command": "i=1; while [ $i -le 25 ]; do echo line $i; i=$((i+1)); sleep 0.1; done",
            "yield_time_ms": 250
        }))
        .await;
    let id = meta(&first).process_id.clone();
    let artifact = meta(&first).artifact.clone();
    let mut observations = vec![first];
    while observations.last().map(|o| meta(o).status) == Some(CommandStatus::Running) {
        tokio::time::sleep(Duration::from_millis(150)).await;
        let next = f
            .process(f.session, json!({"action": "poll", "process_id": id}))
            .await
            .unwrap();
        observations.push(next);
        assert!(observations.len() < 2000, "never finished");
    }
    let last = observations.last().unwrap();
    assert_eq!(meta(last).status, CommandStatus::Succeeded);
    let mut offset = 0;
    let mut seen = String::new();
    for o in &observations {
        assert_eq!(meta(o).output_offset, offset, "a gap or an overlap");
        offset += meta(o).output_bytes;
        seen.push_str(&delta(o));
    }
    let expected: String = (1..=25).map(|i| format!("line {i}\n")).collect();
    assert_eq!(seen, expected);
    assert_eq!(fs::read_to_string(&artifact).unwrap(), expected);
}

#[tokio::test]
async fn sessions_cannot_see_each_others_processes() {
    let f = fixture();
    let other = f.ids.session_id();
    let first = f
        .shell(json!({"command": "sleep 1000", "yield_time_ms": 250}))
        .await;
    let id = meta(&first).process_id.clone();
    assert!(f.rt.has_processes(f.session));
    assert!(!f.rt.has_processes(other));
    let list = f.process(other, json!({"action": "list"})).await.unwrap();
    assert_eq!(list.text, "No tracked command processes.");
    for action in ["poll", "wait", "terminate"] {
        let err = f
            .process(
                other,
                json!({"action": action, "process_id": id, "wait_seconds": 1}),
            )
            .await
            .unwrap_err();
        assert_eq!(err.code(), "tool/process-not-found", "{action}");
    }
    // Still running and still the owner's.
    let poll = f
        .process(f.session, json!({"action": "poll", "process_id": id}))
        .await
        .unwrap();
    assert_eq!(meta(&poll).status, CommandStatus::Running);
    within(f.rt.terminate_session(f.session)).await;
    assert!(!f.rt.has_processes(f.session));
    assert!(eventually_gone(meta(&first).pid).await);
}

#[tokio::test]
async fn notify_on_exit_delivers_the_final_observation() {
    let f = fixture();
    let mut exits = f.rt.subscribe_exits(f.session);
    let first = f
        .shell(json!({
            "command": "echo begin; sleep 1; echo bye; exit 4",
            "yield_time_ms": 250,
            "notify_on_exit": true
        }))
        .await;
    assert_eq!(
        meta(&first).status,
        CommandStatus::Running,
        "{}",
        first.text
    );
    let notice = within(exits.recv()).await.unwrap();
    assert_eq!(notice.session, f.session);
    assert_eq!(notice.process_id, meta(&first).process_id);
    assert_eq!(notice.command, "echo begin; sleep 1; echo bye; exit 4");
    assert!(
        notice.output.text.starts_with("[Failed — exit code 4]\n"),
        "{}",
        notice.output.text
    );
    assert_eq!(meta(&notice.output).exit_code, Some(4));
    assert_eq!(
        format!("{}{}", delta(&first), delta(&notice.output)),
        "begin\nbye\n"
    );
    assert!(!f.rt.has_processes(f.session));

    // Ending inside the yield: the call itself reports it, no notice.
    let quick = f
        .shell(json!({"command": "echo quick", "notify_on_exit": true}))
        .await;
    assert_eq!(meta(&quick).status, CommandStatus::Succeeded);
    assert!(exits.try_recv().is_err());
}

#[tokio::test]
async fn notices_sent_before_subscribing_are_kept() {
    let f = fixture();
    let first = f
        .shell(
            json!({"command": "sleep 1; echo late", "yield_time_ms": 250, "notify_on_exit": true}),
        )
        .await;
    assert_eq!(meta(&first).status, CommandStatus::Running);
    // Wait for the end without observing: the notice is buffered.
    while f.rt.has_processes(f.session) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut exits = f.rt.subscribe_exits(f.session);
    let notice = within(exits.recv()).await.unwrap();
    assert!(
        notice.output.text.ends_with("late\n"),
        "{}",
        notice.output.text
    );
}

// ---- shutdown ----

#[tokio::test]
async fn shutdown_kills_every_group_including_background_jobs() {
    let f = fixture();
    let running = f
        .shell(json!({"command": "sleep 1000", "yield_time_ms": 250}))
        .await;
    assert_eq!(meta(&running).status, CommandStatus::Running);
    // The shell exits at once but leaves `sleep` in its group.
    let detached = f.shell(json!({"command": "sleep 1000 & echo $!"})).await;
    assert_eq!(
        meta(&detached).status,
        CommandStatus::Succeeded,
        "{}",
        detached.text
    );
    let background: u32 = delta(&detached).trim().parse().unwrap();
    assert!(!gone(background));
    assert!(!gone(meta(&running).pid));

    within(f.rt.shutdown()).await;
    assert!(eventually_gone(meta(&running).pid).await);
    assert!(eventually_gone(background).await, "background job survived");
    let err = within(f.rt.shell(f.session, &f.ws, &json!({"command": "true"})))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "tool/runtime-shut-down");
}

#[tokio::test]
async fn dropping_the_runtime_kills_its_groups() {
    let f = fixture();
    let running = f
        .shell(json!({"command": "sleep 1000", "yield_time_ms": 250}))
        .await;
    let pid = meta(&running).pid;
    let Fixture { rt, _dir, .. } = f;
    drop(rt);
    // Supervisors hold no strong reference: the drop reached the runtime.
    assert!(eventually_gone(pid).await);
}

// ---- entry points ----

#[tokio::test]
async fn user_commands_use_the_same_formatter_and_metadata() {
    let f = fixture();
    let out = within(f.rt.run_user_command(f.session, &f.ws, "echo hi; exit 2"))
        .await
        .unwrap();
    assert!(out.text.starts_with("[Failed — exit code 2]\nduration: "));
    assert!(out.text.ends_with("\n\nhi\n"));
    assert_eq!(meta(&out).exit_code, Some(2));
    let request = ShellRequest {
        yield_time_ms: Some(250),
        ..ShellRequest::new("sleep 1000")
    };
    let out = within(f.rt.run_shell(f.session, &f.ws, request))
        .await
        .unwrap();
    assert_eq!(meta(&out).status, CommandStatus::Running);
    within(f.rt.shutdown()).await;
}

#[tokio::test]
async fn shell_process_and_read_share_one_workspace() {
    let f = fixture();
    fs::write(f.root.join("a.txt"), "alpha\n").unwrap();
    let out = within(f.rt.shell(f.session, &f.ws, &json!({"command": "cat a.txt"})))
        .await
        .unwrap();
    assert!(out.text.ends_with("\n\nalpha\n"));
    let out = evoflux_tools::files::read(&f.ws, &json!({"path": "a.txt"})).unwrap();
    assert_eq!(out.text, "    1| alpha\n");
    assert!(out.meta.is_none());
    let out = within(f.rt.process(f.session, &json!({"action": "list"})))
        .await
        .unwrap();
    assert_eq!(out.text, "No tracked command processes.");
}

// ---- command-backed tools ----

fn command_tool(argv: &[&str], env: &[&str], timeout_ms: u64) -> CommandTool {
    CommandTool {
        argv: argv.iter().map(|s| (*s).to_owned()).collect(),
        timeout_ms,
        env: env.iter().map(|s| (*s).to_owned()).collect(),
        approval: Approval::Never,
    }
}

#[tokio::test]
async fn command_tools_pass_placeholders_as_whole_arguments() {
    let f = fixture();
    let tool = command_tool(&["printf", "[%s]", "{{a}}", "{{b}}", "{{n}}"], &[], 30_000);
    let input = json!({"a": "two words", "b": "$HOME; echo pwned", "n": 7});
    let out = within(f.rt.run_command_tool(f.session, &f.ws, &tool, &input))
        .await
        .unwrap();
    assert!(
        out.text.starts_with("[Succeeded]\nduration: "),
        "{}",
        out.text
    );
    assert!(
        out.text.ends_with("\n\n[two words][$HOME; echo pwned][7]"),
        "{}",
        out.text
    );
    assert_eq!(meta(&out).status, CommandStatus::Succeeded);
    assert_eq!(
        fs::read_to_string(&meta(&out).artifact).unwrap(),
        "[two words][$HOME; echo pwned][7]"
    );

    let err = within(f.rt.run_command_tool(f.session, &f.ws, &tool, &json!({"a": "x", "n": 1})))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "tool/input-invalid");
    assert!(err.to_string().contains("`b`"));
}

#[tokio::test]
async fn command_tools_run_relative_programs_from_the_primary_root() {
    let f = fixture();
    let script = f.root.join("scripts/hello.sh");
    fs::create_dir_all(script.parent().unwrap()).unwrap();
    fs::write(&script, "#!/bin/sh\necho \"hello $1 from $(pwd)\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    let tool = command_tool(&["./scripts/hello.sh", "{{name}}"], &[], 30_000);
    let out = within(f.rt.run_command_tool(f.session, &f.ws, &tool, &json!({"name": "ada"})))
        .await
        .unwrap();
    let root = f.root.canonicalize().unwrap();
    assert!(
        out.text
            .ends_with(&format!("hello ada from {}\n", root.display())),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn command_tools_time_out() {
    let f = fixture();
    let tool = command_tool(&["sleep", "60"], &[], 300);
    let out = within(f.rt.run_command_tool(f.session, &f.ws, &tool, &json!({})))
        .await
        .unwrap();
    assert!(out.text.starts_with("[Timed out]\n"), "{}", out.text);
    assert_eq!(meta(&out).status, CommandStatus::TimedOut);
    assert!(eventually_gone(meta(&out).pid).await);
}

#[tokio::test]
async fn command_tools_get_only_declared_variables() {
    let f = fixture();
    let tool = command_tool(&["env"], &["DEPLOY_TOKEN", "EVOFLUX_SECRET"], 30_000);
    let out = within(f.rt.run_command_tool(f.session, &f.ws, &tool, &json!({})))
        .await
        .unwrap();
    assert!(
        out.text.contains("DEPLOY_TOKEN=declared-token"),
        "{}",
        out.text
    );
    assert!(out.text.contains("PATH="));
    assert!(!out.text.contains("EVOFLUX_SECRET"));
    assert!(!out.text.contains("OPENAI_API_KEY"));
}

#[tokio::test]
async fn command_tools_report_spawn_failures() {
    let f = fixture();
    let tool = command_tool(&["evoflux-no-such-program-xyz"], &[], 30_000);
    let err = within(f.rt.run_command_tool(f.session, &f.ws, &tool, &json!({})))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "tool/spawn-failed");
    assert!(!f.rt.has_processes(f.session));
    let session_dir = f
        ._dir
        .path()
        .join("data/artifacts")
        .join(f.session.to_string());
    assert_eq!(
        fs::read_dir(session_dir).unwrap().count(),
        0,
        "no artifact left"
    );
}

#[test]
fn parsers_match_the_framework_schemas() {
    use evoflux_graph::tool::framework_tool;
    use evoflux_tools::ProcessRequest;
    let keys = |name: &str| -> Vec<String> {
        let def = framework_tool(name).unwrap();
        let mut keys: Vec<String> = def.input_schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        keys.sort_unstable();
        keys
    };
    let mut process: Vec<&str> = ProcessRequest::FIELDS.to_vec();
    process.sort_unstable();
    assert_eq!(keys("process"), process);
    // `notify_on_exit` is ours until the framework schema declares it.
    let schema = keys("shell");
    for key in &schema {
        assert!(ShellRequest::FIELDS.contains(&key.as_str()), "{key}");
    }
    for field in ShellRequest::FIELDS {
        assert!(
            schema.iter().any(|k| k == field) || *field == "notify_on_exit",
            "{field}"
        );
    }
}

/// Whether a process whose command line contains `marker` runs.
fn running(marker: &str) -> bool {
    fs::read_dir("/proc").unwrap().flatten().any(|e| {
        fs::read(e.path().join("cmdline"))
            .map(|c| {
                String::from_utf8_lossy(&c)
                    .replace('\0', " ")
                    .contains(marker)
            })
            .unwrap_or(false)
    })
}

#[tokio::test]
async fn terminating_a_session_stops_its_sandboxed_commands() {
    use evoflux_tools::sandbox::{CommandSandbox, Confinement};
    let f = fixture();
    let sandbox = CommandSandbox::new(
        evoflux_graph::sandbox::SandboxPolicy::framework_default(),
        Confinement::SessionWorkspace,
        vec![f.root.clone()],
        Vec::new(),
    )
    .unwrap();
    f.rt.confine(f.session, sandbox);
    let marker = format!("sleep 1000 # sandboxed-{}", std::process::id());
    let first = f
        .shell(json!({"command": marker, "yield_time_ms": 250}))
        .await;
    if first.is_error {
        // No bubblewrap on this machine: the sandbox refuses, nothing runs.
        assert!(first.text.contains("sandbox"), "{}", first.text);
        return;
    }
    assert_eq!(meta(&first).status, CommandStatus::Running);
    assert!(running(&marker));
    within(f.rt.terminate_session(f.session)).await;
    for _ in 0..250 {
        if !running(&marker) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        !running(&marker),
        "a sandboxed command outlived its session"
    );
}

#[tokio::test]
async fn a_flood_past_the_journal_cap_keeps_head_marker_and_tail() {
    use evoflux_graph::sandbox::{FilesystemPolicy, NetworkPolicy, SandboxPolicy};
    use evoflux_tools::sandbox::{CommandSandbox, Confinement};
    let f = fixture();
    let mut policy = SandboxPolicy::framework_default();
    // Unconfined, so the test needs no bubblewrap; the cap applies anyway.
    policy.filesystem = FilesystemPolicy::FullAccess;
    policy.network = NetworkPolicy::Allow;
    policy.journal_cap_mib = 1;
    let sandbox = CommandSandbox::new(
        policy,
        Confinement::Repositories,
        vec![f.root.clone()],
        Vec::new(),
    )
    .unwrap();
    f.rt.confine(f.session, sandbox);
    let out = f
        .shell(json!({"command": "seq 1 2000000", "yield_time_ms": 30000}))
        .await;
    let expected: String = (1..=2_000_000).map(|i| format!("{i}\n")).collect();
    let m = meta(&out);
    assert_eq!(m.status, CommandStatus::Succeeded, "{}", out.text);
    // Offsets and counts are of the output, not of the capped file.
    assert_eq!(m.output_bytes, expected.len() as u64);
    let cap = 1024 * 1024;
    assert_eq!(m.journal_dropped_bytes, expected.len() as u64 - cap);
    let artifact = fs::read_to_string(&m.artifact).unwrap();
    let (head, rest) = artifact.split_at(cap as usize / 2);
    assert_eq!(head, &expected[..cap as usize / 2]);
    let marker_end = rest.find("bytes are kept]\n").unwrap() + "bytes are kept]\n".len();
    assert!(
        rest[..marker_end].contains(&format!("{} bytes of output", m.journal_dropped_bytes)),
        "{}",
        &rest[..marker_end]
    );
    assert_eq!(
        &rest[marker_end..],
        &expected[expected.len() - cap as usize / 2..]
    );
    // The observation says where the full output went and that the cap cut it.
    assert!(out.text.contains("journal cap"), "{}", out.text);
    assert!(out.text.contains(&format!(
        "Full output: {} ({} bytes)",
        evoflux_tools::artifact_locator(&m.artifact),
        artifact.len()
    )));
}

#[tokio::test]
async fn ending_a_session_stops_what_left_its_group_and_only_that() {
    let f = fixture();
    let other = f.ids.session_id();
    let escaped = format!("sleep 1001 # escaped-{}", std::process::id());
    let neighbour = format!("sleep 1002 # neighbour-{}", std::process::id());
    let out = f
        .shell(json!({"command": format!("setsid sh -c '{escaped}' > /dev/null 2>&1 & sleep 0.2")}))
        .await;
    assert_eq!(meta(&out).status, CommandStatus::Succeeded, "{}", out.text);
    let other_out = within(f.rt.shell(
        other,
        &f.ws,
        &json!({"command": format!("setsid sh -c '{neighbour}' > /dev/null 2>&1 & sleep 0.2")}),
    ))
    .await
    .unwrap();
    assert_eq!(meta(&other_out).status, CommandStatus::Succeeded);
    assert!(running(&escaped) && running(&neighbour));
    within(f.rt.terminate_session(f.session)).await;
    for _ in 0..250 {
        if !running(&escaped) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        !running(&escaped),
        "an escaped command outlived its session"
    );
    assert!(running(&neighbour), "another session's command was stopped");
    within(f.rt.shutdown()).await;
    for _ in 0..250 {
        if !running(&neighbour) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        !running(&neighbour),
        "an escaped command outlived the runtime"
    );
}

#[tokio::test]
async fn read_reaches_a_commands_full_output_by_its_locator() {
    let f = fixture();
    let out = f
        .shell(json!({"command": "seq 1 100000", "yield_time_ms": 30000}))
        .await;
    let m = meta(&out);
    let locator = evoflux_tools::artifact_locator(&m.artifact);
    // The observation names the locator, never the data directory.
    assert!(
        out.text.contains(&format!("Full output: {locator} (")),
        "{}",
        out.text
    );
    assert!(
        !out.text.contains(&m.artifact.display().to_string()),
        "{}",
        out.text
    );
    let ws = f.ws.clone().with_artifacts(m.artifact.parent().unwrap());
    let input = json!({"path": locator, "offset": 50000, "limit": 2});
    let read = evoflux_tools::files::read(&ws, &input).unwrap();
    assert!(
        read.text.contains("50000| 50000\n") || read.text.contains("50000"),
        "{}",
        read.text
    );
    assert!(read.text.contains("50001"), "{}", read.text);
    // Without the session's artifacts folder, or for another name, nothing.
    let missing = evoflux_tools::files::read(&f.ws, &input).unwrap_err();
    assert_eq!(missing.code(), "tool/not-found");
    let other = json!({"path": "artifact:proc_ffffffffff.txt"});
    let missing = evoflux_tools::files::read(&ws, &other).unwrap_err();
    assert_eq!(missing.code(), "tool/not-found");
}
