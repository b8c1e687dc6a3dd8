#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Previews on the real runtime: a real `python3 -m http.server`, its port
//! found from its socket (Python buffers its banner when its output is a
//! pipe), fetched over loopback; not a `process` command; stopped by
//! `stop`, by closing the session and by shutdown, not by a cancelled turn.

use std::ffi::OsString;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use evoflux_core::ids::{Ids, SessionId};
use evoflux_tools::{
    CommandStatus, PreviewBrowser, PreviewChange, PreviewInfo, PreviewOutcome, ProcessRuntime,
    RuntimeConfig, Workspace,
};
use serde_json::{Value, json};
use tempfile::TempDir;

/// Where no browser takes snapshots.
const NO_BROWSER: PreviewBrowser<'static> =
    PreviewBrowser::Unavailable("this front end runs no browser");

struct Fixture {
    _dir: TempDir,
    ws: Workspace,
    rt: ProcessRuntime,
    session: SessionId,
}

fn python() -> Option<PathBuf> {
    let found = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        evoflux_core::prerequisite::missing("python3", "install Python 3 (Debian: python3)");
        return None;
    }
    Some(PathBuf::from("python3"))
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("hello.txt"), "hello from the preview\n").unwrap();
    let ids = Ids::sequential();
    let mut config = RuntimeConfig::new(dir.path().join("data/artifacts"));
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    let home: &Path = dir.path();
    config.parent_env = vec![
        ("PATH".into(), path),
        ("HOME".into(), OsString::from(home)),
        ("SHELL".into(), "/bin/sh".into()),
    ];
    // pyenv shims need their root, found from HOME otherwise.
    if let Some(v) = std::env::var_os("PYENV_ROOT") {
        config.parent_env.push(("PYENV_ROOT".into(), v));
    }
    config.terminate_grace = Duration::from_secs(2);
    config.ids = ids.clone();
    let session = ids.session_id();
    Fixture {
        ws: Workspace::new([&root]).unwrap(),
        rt: ProcessRuntime::new(config),
        session,
        _dir: dir,
    }
}

async fn within<T>(fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(90), fut)
        .await
        .expect("test step did not finish within 90 s")
}

impl Fixture {
    async fn preview(&self, input: Value) -> PreviewOutcome {
        within(
            self.rt
                .preview_in(self.session, &self.ws, &input, NO_BROWSER),
        )
        .await
        .unwrap()
    }

    /// Starts `python3 -m http.server 0` and returns its preview.
    async fn serve(&self) -> PreviewInfo {
        let out = self
            .preview(json!({"action": "start", "command": "exec python3 -m http.server 0 --bind 127.0.0.1"}))
            .await;
        assert!(!out.output.is_error, "{}", out.output.text);
        match out.change {
            Some(PreviewChange::Serving(info)) => {
                assert!(
                    out.output.text.contains(&info.url().unwrap()),
                    "{}",
                    out.output.text
                );
                info
            }
            other => panic!("no address found: {other:?}\n{}", out.output.text),
        }
    }
}

/// The body of `GET <url>hello.txt`, or the error.
async fn fetch(info: &PreviewInfo) -> Result<String, std::io::Error> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = info.address.unwrap();
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream
        .write_all(b"GET /hello.txt HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    Ok(response)
}

async fn unreachable(info: &PreviewInfo) -> bool {
    for _ in 0..200 {
        if fetch(info).await.is_err() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    false
}

#[tokio::test]
async fn a_preview_serves_until_stopped_and_is_not_a_command() {
    if python().is_none() {
        return;
    }
    let f = fixture();
    let info = f.serve().await;
    assert_eq!(info.status, CommandStatus::Running);
    assert!(info.preview_id.starts_with("preview_"));
    let body = within(fetch(&info)).await.unwrap();
    assert!(body.contains("hello from the preview"), "{body}");
    println!(
        "measure: preview start-to-URL {} ms",
        info.startup_ms.unwrap()
    );

    // Not the model's command registry.
    let list = within(f.rt.process(f.session, &json!({"action": "list"})))
        .await
        .unwrap();
    assert!(!list.text.contains(&info.preview_id), "{}", list.text);
    assert!(!f.rt.has_processes(f.session));
    // A cancelled turn stops the session's commands, not its previews.
    within(f.rt.terminate_session(f.session)).await;
    assert!(within(fetch(&info)).await.is_ok());

    let status = f.preview(json!({"action": "status"})).await.output.text;
    assert!(status.contains(&info.preview_id), "{status}");
    assert_eq!(f.rt.previews(f.session), vec![info.clone()]);
    let logs = f
        .preview(json!({"action": "logs", "preview_id": info.preview_id}))
        .await;
    assert!(!logs.output.is_error, "{}", logs.output.text);
    assert!(
        !logs.output.text.contains("process("),
        "{}",
        logs.output.text
    );

    let stopped = f
        .preview(json!({"action": "stop", "preview_id": info.preview_id}))
        .await;
    assert!(
        matches!(&stopped.change, Some(PreviewChange::Stopped(i)) if i.preview_id == info.preview_id),
        "{stopped:?}"
    );
    assert!(unreachable(&info).await, "still served after stop");
    assert!(f.rt.previews(f.session).is_empty());
    let again = within(f.rt.preview_in(
        f.session,
        &f.ws,
        &json!({"action": "logs", "preview_id": info.preview_id}),
        NO_BROWSER,
    ))
    .await
    .unwrap_err();
    assert_eq!(again.code(), "tool/preview-not-found");
}

#[tokio::test]
async fn closing_the_session_and_shutdown_stop_previews() {
    if python().is_none() {
        return;
    }
    let f = fixture();
    let first = f.serve().await;
    within(f.rt.close_session(f.session)).await;
    assert!(unreachable(&first).await, "served after the session closed");
    assert!(f.rt.previews(f.session).is_empty());

    let second = f.serve().await;
    within(f.rt.shutdown()).await;
    assert!(unreachable(&second).await, "served after shutdown");
}

#[tokio::test]
async fn a_server_that_exits_before_listening_is_an_error() {
    let f = fixture();
    let out = f
        .preview(json!({"action": "start", "command": "echo cannot bind >&2; exit 3"}))
        .await;
    assert!(out.output.is_error, "{}", out.output.text);
    assert!(
        out.output.text.contains("cannot bind"),
        "{}",
        out.output.text
    );
    assert_eq!(out.change, None);
    assert!(f.rt.previews(f.session).is_empty());
    let missing =
        within(f.rt.preview_in(f.session, &f.ws, &json!({"action": "start"}), NO_BROWSER))
            .await
            .unwrap_err();
    assert_eq!(missing.code(), "tool/input-invalid");
}

/// Previews run on the process runtime, which behaves otherwise for root
/// (most containers) than for a user: every test above runs again as
/// `nobody`.
#[test]
fn previews_work_for_an_unprivileged_user_too() {
    if python().is_none() {
        return;
    }
    crate::common::rerun_unprivileged("preview::", "previews_work_for_an_unprivileged_user_too");
}

/// `snapshot`: the session's browser, whose reach keeps loopback closed
/// (`browser_loopback` off), opens exactly the running preview and takes
/// its screenshot, kept in the browser's folder; without a browser the
/// call says why with its code, and a stopped preview is closed again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_shows_the_running_preview_and_nothing_else_on_loopback() {
    use base64::Engine as _;
    use evoflux_tools::browser::{Browser, BrowserConfig, Reach, find_chromium};

    if python().is_none() {
        return;
    }
    let Some(chromium) = find_chromium(None) else {
        evoflux_core::prerequisite::missing("Chromium", "install Debian's `chromium`");
        return;
    };
    let f = fixture();
    let info = f.serve().await;
    let url = info.url().unwrap();
    let snapshot = json!({"action": "snapshot", "preview_id": info.preview_id});
    let without = within(f.rt.preview_in(f.session, &f.ws, &snapshot, NO_BROWSER))
        .await
        .unwrap_err();
    assert_eq!(without.code(), "tool/preview-snapshot-unavailable");

    let dir = tempfile::tempdir().unwrap();
    let browser = Browser::new(BrowserConfig {
        chromium,
        dir: dir.path().join("browser"),
        reach: Reach::Public,
    });
    let closed = within(browser.run(&json!({"action": "open", "url": url}))).await;
    assert!(closed.output.is_error, "{}", closed.output.text);

    for round in ["cold", "warm"] {
        let started = std::time::Instant::now();
        let out = within(f.rt.preview_in(
            f.session,
            &f.ws,
            &json!({"action": "snapshot"}),
            PreviewBrowser::Session(&browser),
        ))
        .await
        .unwrap();
        println!(
            "measure: preview snapshot {} ms ({round}: Chromium {})",
            started.elapsed().as_millis(),
            if round == "cold" {
                "started by it"
            } else {
                "running"
            }
        );
        assert!(!out.output.is_error, "{}", out.output.text);
        assert!(
            out.output
                .text
                .starts_with(&format!("Snapshot of preview {}", info.preview_id)),
            "{}",
            out.output.text
        );
        let shot = out.screenshot.expect("a screenshot");
        let kept = std::fs::read(&shot.path).unwrap();
        assert!(kept.starts_with(b"\x89PNG\r\n"));
        assert_eq!(
            base64::engine::general_purpose::STANDARD
                .decode(&shot.png_base64)
                .unwrap(),
            kept
        );
        assert!(
            shot.path
                .starts_with(dir.path().join("browser/screenshots"))
        );
    }

    // Only the preview's own address is open: another loopback port is not.
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let elsewhere = format!("http://{}/", other.local_addr().unwrap());
    let refused = within(browser.run(&json!({"action": "open", "url": elsewhere}))).await;
    assert!(refused.output.is_error, "{}", refused.output.text);

    // A stopped preview is closed to the browser again.
    within(f.rt.preview_in(
        f.session,
        &f.ws,
        &json!({"action": "stop", "preview_id": info.preview_id}),
        PreviewBrowser::Session(&browser),
    ))
    .await
    .unwrap();
    assert!(browser.previews().addresses().is_empty());
    let gone = within(f.rt.preview_in(
        f.session,
        &f.ws,
        &json!({"action": "snapshot"}),
        PreviewBrowser::Session(&browser),
    ))
    .await
    .unwrap_err();
    assert_eq!(gone.code(), "tool/preview-snapshot-unavailable");
    browser.shutdown().await;
}
