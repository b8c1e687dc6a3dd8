//! The `browser` executor: one headless Chromium per session, driven over
//! the DevTools protocol ([`cdp`]), started on the session's first call
//! and stopped with the session.
//!
//! * The profile (cookies, storage) lives in the session's own folder, so
//!   nothing leaks between sessions; downloads and screenshots go beside
//!   it.
//! * Every request the page makes passes [`Reach::check`]: only http(s),
//!   to the addresses the session's network policy allows, or to exactly
//!   the session's running previews ([`PreviewOrigins`]). `file://`,
//!   `chrome://` and the like are refused.
//! * Chromium runs as the leader of its own process group with the pipe
//!   as its only line to evoflux: dropping the [`Browser`] kills the
//!   group, and a killed evoflux closes the pipe, on which Chromium exits.
//! * Every action is bounded in time (`timeout`), the text returned in
//!   characters and the list of elements in length.

mod cdp;
mod page;
pub mod reach;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::group::ProcessGroup;
use crate::output::ToolOutput;
use crate::sync::lock;
use cdp::{Cdp, CdpEvent};
pub use page::{Action, BrowserInput};
use reach::Gate;
pub use reach::{PreviewOrigins, Reach};

pub use evoflux_graph::tool::builtin::browser::{
    DEFAULT_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS, MIN_TIMEOUT_SECONDS,
};

/// The most characters of page text one result carries.
pub const MAX_TEXT_CHARS: usize = 30_000;
/// The most interactive elements one read lists.
pub const MAX_ELEMENTS: usize = 200;
/// The largest file `download` keeps.
pub const MAX_DOWNLOAD_BYTES: u64 = 100 * 1024 * 1024;
/// The viewport pages are laid out in, and screenshots taken of.
pub const VIEWPORT: (u32, u32) = (1280, 800);
/// How long Chromium may take to start.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Debian's Chromium binary itself: `/usr/bin/chromium` is a shell
/// launcher that reads the user's home and sources `/etc/chromium.d`.
const DEBIAN_CHROMIUM: &str = "/usr/lib/chromium/chromium";
/// Names a Chromium is installed under, looked up on `PATH`.
const CHROMIUM_NAMES: &[&str] = &[
    "chromium",
    "chromium-browser",
    "google-chrome-stable",
    "google-chrome",
];

/// Why the browser is unavailable when no Chromium is found, with its
/// stable code.
pub const NOT_INSTALLED: &str = "Chromium is not installed (install the `chromium` package)";
pub const NOT_INSTALLED_CODE: &str = "tool/chromium-missing";

/// Finds the Chromium to run: `explicit` when given (only if it exists),
/// else Debian's binary, else the first Chromium on `PATH`. `None`:
/// the browser is unavailable ([`NOT_INSTALLED`]).
pub fn find_chromium(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(path) = explicit {
        return path.is_file().then(|| path.to_owned());
    }
    if Path::new(DEBIAN_CHROMIUM).is_file() {
        return Some(PathBuf::from(DEBIAN_CHROMIUM));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .flat_map(|dir| CHROMIUM_NAMES.iter().map(move |name| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// What one session's browser is started with.
#[derive(Debug, Clone)]
pub struct BrowserConfig {
    /// The Chromium binary ([`find_chromium`]).
    pub chromium: PathBuf,
    /// The session's browser folder: `profile/`, `downloads/` and
    /// `screenshots/` are made below it.
    pub dir: PathBuf,
    pub reach: Reach,
}

impl BrowserConfig {
    pub fn profile_dir(&self) -> PathBuf {
        self.dir.join("profile")
    }
    pub fn downloads_dir(&self) -> PathBuf {
        self.dir.join("downloads")
    }
    pub fn screenshots_dir(&self) -> PathBuf {
        self.dir.join("screenshots")
    }
}

/// A screenshot a call took: the PNG (base64, for the model) and where
/// it was kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Screenshot {
    pub png_base64: String,
    pub path: PathBuf,
}

impl Screenshot {
    /// The image a tool result carries: named by its file, with the file
    /// as its source, so every view's note says which artifact it is
    /// (`[image: screenshot-1.png, image/png, 9 KB]`).
    pub fn into_media(self) -> evoflux_protocol::Media {
        let mut image = evoflux_protocol::Media::new(
            evoflux_protocol::MediaKind::Image,
            "image/png",
            self.png_base64,
        );
        image.name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        image.source = Some(self.path.display().to_string());
        image
    }
}

/// What one call returns.
#[derive(Debug)]
pub struct BrowserOutput {
    pub output: ToolOutput,
    pub screenshot: Option<Screenshot>,
}

impl BrowserOutput {
    fn text(output: ToolOutput) -> BrowserOutput {
        BrowserOutput {
            output,
            screenshot: None,
        }
    }
}

/// One session's browser: not started until its first call.
#[derive(Debug)]
pub struct Browser {
    config: BrowserConfig,
    /// The session's running previews, reached whatever `config.reach`.
    previews: PreviewOrigins,
    running: tokio::sync::Mutex<Option<Running>>,
}

/// What one call of [`Browser`] does on the page.
enum Call<'a> {
    /// A `browser` tool call.
    Act(&'a BrowserInput),
    /// `preview(action='snapshot')`: open the preview's URL and take a
    /// screenshot.
    Snapshot(&'a str),
}

impl Browser {
    pub fn new(config: BrowserConfig) -> Browser {
        Browser {
            config,
            previews: PreviewOrigins::default(),
            running: tokio::sync::Mutex::new(None),
        }
    }

    pub fn config(&self) -> &BrowserConfig {
        &self.config
    }

    /// The session's running previews this browser reaches whatever its
    /// reach ([`PreviewOrigins`]); the process runtime keeps them current.
    pub fn previews(&self) -> &PreviewOrigins {
        &self.previews
    }

    /// Runs one call; calls of a session run one at a time.
    pub async fn run(&self, input: &Value) -> BrowserOutput {
        let input = match BrowserInput::parse(input) {
            Ok(i) => i,
            Err(e) => return BrowserOutput::text(ToolOutput::error(e)),
        };
        self.call(Call::Act(&input), input.timeout()).await
    }

    /// Opens `url` (a preview's, which [`Browser::previews`] must admit
    /// unless the reach does) on the session's page, waits for it to load
    /// and takes a screenshot, like `browser`'s `screenshot`: the PNG for
    /// the model, kept in the screenshots folder. Bounded by `limit`.
    pub async fn snapshot(&self, url: &str, limit: Duration) -> BrowserOutput {
        self.call(Call::Snapshot(url), limit).await
    }

    async fn call(&self, call: Call<'_>, limit: Duration) -> BrowserOutput {
        let mut running = self.running.lock().await;
        if running.as_ref().is_some_and(Running::exited) {
            *running = None;
        }
        if running.is_none() {
            match Running::start(&self.config, self.gate()).await {
                Ok(r) => *running = Some(r),
                Err(e) => {
                    return BrowserOutput::text(ToolOutput::error(format!(
                        "the browser could not start: {e}"
                    )));
                }
            }
        }
        let Some(r) = running.as_mut() else {
            return BrowserOutput::text(ToolOutput::error("the browser could not start"));
        };
        let page = page::Page {
            cdp: &r.cdp,
            session: &r.page,
            shared: &r.shared,
            config: &self.config,
            gate: self.gate(),
            deadline: tokio::time::Instant::now() + limit,
        };
        let out = match call {
            Call::Act(input) => page.act(input).await,
            Call::Snapshot(url) => page.snapshot(url).await,
        };
        if r.exited() {
            // The next call starts a fresh browser on the same profile.
            *running = None;
        }
        out
    }

    fn gate(&self) -> Gate {
        Gate {
            reach: self.config.reach,
            previews: self.previews.clone(),
        }
    }

    /// The browser's process group while it runs (for tests and figures).
    pub async fn process_group(&self) -> Option<u32> {
        self.running.lock().await.as_ref().map(|r| r.pid)
    }

    /// Closes the browser (its whole process group), if it runs.
    pub async fn shutdown(&self) {
        let Some(mut r) = self.running.lock().await.take() else {
            return;
        };
        let _ = tokio::time::timeout(
            Duration::from_secs(2),
            r.cdp.call(None, "Browser.close", json!({})),
        )
        .await;
        let _ = tokio::time::timeout(Duration::from_secs(3), r.child.wait()).await;
        // `Drop` kills what is left of the group.
    }
}

/// A download the browser reported.
#[derive(Debug, Clone, Default)]
pub(crate) struct Download {
    pub guid: String,
    pub file: String,
    pub state: String,
    pub received: u64,
}

/// What the event task and the actions share.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// Requests refused since the last result, to report them.
    pub blocked: Mutex<Vec<String>>,
    pub downloads: Mutex<Vec<Download>>,
    pub download_changed: tokio::sync::Notify,
}

/// A started Chromium.
#[derive(Debug)]
struct Running {
    child: tokio::process::Child,
    pid: u32,
    group: ProcessGroup,
    cdp: Cdp,
    /// The session of the page the tool drives.
    page: String,
    shared: Arc<Shared>,
    events: tokio::task::JoinHandle<()>,
}

impl Drop for Running {
    /// The browser never outlives the session's handle on it.
    fn drop(&mut self) {
        self.events.abort();
        self.group.kill();
    }
}

impl Running {
    fn exited(&self) -> bool {
        !self.group.is_alive()
    }

    async fn start(config: &BrowserConfig, gate: Gate) -> Result<Running, String> {
        for dir in [
            config.profile_dir(),
            config.downloads_dir(),
            config.screenshots_dir(),
        ] {
            std::fs::create_dir_all(&dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let (from_us, to_browser) = std::io::pipe().map_err(|e| e.to_string())?;
        let (from_browser, to_us) = std::io::pipe().map_err(|e| e.to_string())?;
        let log = std::fs::File::create(config.dir.join("chromium.log"))
            .map_err(|e| format!("cannot create the browser's log: {e}"))?;
        let mut command = tokio::process::Command::new(&config.chromium);
        command
            .args(chromium_args(config))
            // Chromium sees none of the user's environment: its home is
            // the session's browser folder, never the user's.
            .env_clear()
            .env("HOME", &config.dir)
            .env("XDG_CONFIG_HOME", config.dir.join("config"))
            .env("XDG_CACHE_HOME", config.dir.join("cache"))
            .envs(std::env::var_os("PATH").map(|p| ("PATH", p)))
            .envs(std::env::var_os("TMPDIR").map(|p| ("TMPDIR", p)))
            .current_dir(&config.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .process_group(0)
            .kill_on_drop(true);
        command_fds::CommandFdExt::fd_mappings(
            &mut command,
            vec![
                command_fds::FdMapping {
                    parent_fd: from_us.into(),
                    child_fd: 3,
                },
                command_fds::FdMapping {
                    parent_fd: to_us.into(),
                    child_fd: 4,
                },
            ],
        )
        .map_err(|e| e.to_string())?;
        let child = command
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", config.chromium.display()))?;
        // Chromium's ends of the pipes are closed here, so its exit ends
        // our reads.
        drop(command);
        let pid = child.id().ok_or("Chromium exited at once")?;
        let group = ProcessGroup::led_by(pid).ok_or("Chromium exited at once")?;
        let (cdp, events) = Cdp::start(to_browser, from_browser).map_err(|e| e.to_string())?;
        let shared = Arc::new(Shared::default());
        let (pages_tx, mut pages) = mpsc::unbounded_channel();
        let task = tokio::spawn(handle_events(
            cdp.clone(),
            events,
            gate,
            Arc::clone(&shared),
            pages_tx,
        ));
        let mut running = Running {
            child,
            pid,
            group,
            cdp: cdp.clone(),
            page: String::new(),
            shared,
            events: task,
        };
        let setup = async {
            cdp.call(None, "Browser.getVersion", json!({})).await?;
            cdp.call(
                None,
                "Browser.setDownloadBehavior",
                json!({
                    "behavior": "allow",
                    "downloadPath": config.downloads_dir(),
                    "eventsEnabled": true,
                }),
            )
            .await?;
            // Every page, frame and worker is attached paused, so its
            // requests are checked from the first one.
            cdp.call(
                None,
                "Target.setAutoAttach",
                json!({"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true}),
            )
            .await?;
            let created = cdp
                .call(None, "Target.createTarget", json!({"url": "about:blank"}))
                .await?;
            let target = created["targetId"].as_str().unwrap_or_default().to_owned();
            while let Some((id, session)) = pages.recv().await {
                if id == target {
                    return Ok(session);
                }
            }
            Err("the browser closed while starting".to_owned())
        };
        running.page = match tokio::time::timeout(START_TIMEOUT, setup).await {
            Ok(Ok(session)) => session,
            Ok(Err(e)) => return Err(with_log(e, config)),
            Err(_) => {
                return Err(with_log(
                    format!("it did not answer within {} s", START_TIMEOUT.as_secs()),
                    config,
                ));
            }
        };
        let (w, h) = VIEWPORT;
        cdp.call(
            Some(&running.page),
            "Emulation.setDeviceMetricsOverride",
            json!({"width": w, "height": h, "deviceScaleFactor": 1, "mobile": false}),
        )
        .await?;
        Ok(running)
    }
}

/// The reason Chromium failed, with the end of its log.
fn with_log(error: String, config: &BrowserConfig) -> String {
    let log = std::fs::read_to_string(config.dir.join("chromium.log")).unwrap_or_default();
    let tail: Vec<&str> = log.lines().rev().take(5).collect();
    match tail.is_empty() {
        true => error,
        false => format!(
            "{error}; its log ends:\n{}",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        ),
    }
}

/// Chromium's command line: headless, the session's profile, nothing
/// that calls home, and no route out but loopback where the network is
/// denied.
fn chromium_args(config: &BrowserConfig) -> Vec<String> {
    let (w, h) = VIEWPORT;
    let mut args: Vec<String> = [
        "--headless",
        "--remote-debugging-pipe",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-breakpad",
        "--disable-crash-reporter",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--disable-default-apps",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--password-store=basic",
        "--use-mock-keychain",
        "--mute-audio",
        "--hide-scrollbars",
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    ]
    .map(str::to_owned)
    .to_vec();
    args.push(format!("--window-size={w},{h}"));
    args.push(format!(
        "--user-data-dir={}",
        config.profile_dir().display()
    ));
    // Chromium's own sandbox needs user namespaces a root process (a
    // container) does not get; it refuses to start as root without this.
    if rustix::process::geteuid().is_root() {
        args.push("--no-sandbox".to_owned());
    }
    if config.reach.loopback_only() {
        // A proxy that does not exist: everything but loopback (which
        // Chromium never proxies) fails to connect.
        args.push("--proxy-server=http://127.0.0.1:9".to_owned());
    }
    args
}

/// Answers the browser's events for the life of the browser: checks every
/// paused request, sets up every attached target, follows downloads.
async fn handle_events(
    cdp: Cdp,
    mut events: mpsc::UnboundedReceiver<CdpEvent>,
    gate: Gate,
    shared: Arc<Shared>,
    pages: mpsc::UnboundedSender<(String, String)>,
) {
    while let Some(event) = events.recv().await {
        match event.method.as_str() {
            "Fetch.requestPaused" => {
                let cdp = cdp.clone();
                let shared = Arc::clone(&shared);
                let gate = gate.clone();
                tokio::spawn(async move {
                    let id = event.params["requestId"].clone();
                    let url = event.params["request"]["url"].as_str().unwrap_or_default();
                    let session = event.session.as_deref();
                    let _ = match gate.check(url).await {
                        Ok(()) => {
                            cdp.call(session, "Fetch.continueRequest", json!({"requestId": id}))
                                .await
                        }
                        Err(why) => {
                            lock(&shared.blocked).push(why);
                            cdp.call(
                                session,
                                "Fetch.failRequest",
                                json!({"requestId": id, "errorReason": "BlockedByClient"}),
                            )
                            .await
                        }
                    };
                });
            }
            "Target.attachedToTarget" => {
                let cdp = cdp.clone();
                let pages = pages.clone();
                tokio::spawn(async move {
                    let Some(session) = event.params["sessionId"].as_str() else {
                        return;
                    };
                    let info = &event.params["targetInfo"];
                    let _ = cdp
                        .call(
                            Some(session),
                            "Fetch.enable",
                            json!({"patterns": [{"urlPattern": "*", "requestStage": "Request"}]}),
                        )
                        .await;
                    let _ = cdp
                        .call(
                            Some(session),
                            "Target.setAutoAttach",
                            json!({"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true}),
                        )
                        .await;
                    let _ = cdp
                        .call(Some(session), "Runtime.runIfWaitingForDebugger", json!({}))
                        .await;
                    if info["type"] == "page" {
                        let id = info["targetId"].as_str().unwrap_or_default().to_owned();
                        let _ = pages.send((id, session.to_owned()));
                    }
                });
            }
            "Browser.downloadWillBegin" => {
                lock(&shared.downloads).push(Download {
                    guid: event.params["guid"].as_str().unwrap_or_default().to_owned(),
                    file: event.params["suggestedFilename"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    state: "inProgress".to_owned(),
                    received: 0,
                });
                shared.download_changed.notify_waiters();
            }
            "Browser.downloadProgress" => {
                let guid = event.params["guid"].as_str().unwrap_or_default();
                let received = event.params["receivedBytes"].as_u64().unwrap_or(0);
                let state = event.params["state"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                if let Some(d) = lock(&shared.downloads).iter_mut().find(|d| d.guid == guid) {
                    d.received = received;
                    d.state = state;
                }
                if received > MAX_DOWNLOAD_BYTES {
                    let cdp = cdp.clone();
                    let guid = guid.to_owned();
                    tokio::spawn(async move {
                        let _ = cdp
                            .call(None, "Browser.cancelDownload", json!({"guid": guid}))
                            .await;
                    });
                }
                shared.download_changed.notify_waiters();
            }
            _ => {}
        }
    }
}
