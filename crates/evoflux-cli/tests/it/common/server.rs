//! A running `evoflux serve` for end-to-end tests, and its event stream.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::Value;

use super::Sandbox;

/// A running `evoflux serve`; stopped (SIGTERM) when dropped.
pub struct Server {
    pub child: Child,
    pub url: String,
    pub token: String,
    pub http: reqwest::Client,
}

impl Server {
    pub fn start(s: &Sandbox, extra: &[&str]) -> Server {
        Server::start_with_env(s, extra, &[])
    }

    /// Starts the server with `env` set in its environment too.
    pub fn start_with_env(s: &Sandbox, extra: &[&str], env: &[(&str, &str)]) -> Server {
        let repo = s.repo();
        let mut args = vec![
            "serve",
            "--port",
            "0",
            "--workspace",
            repo.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let mut child = s
            .command(&args)
            .env("PATH", std::env::var("PATH").unwrap())
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_owned();
        let token = String::from_utf8(s.run(&["serve", "--print-token"]).stdout)
            .unwrap()
            .trim()
            .to_owned();
        evoflux_core::tls::install_crypto_provider();
        Server {
            child,
            url,
            token,
            http: reqwest::Client::new(),
        }
    }

    pub fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.http
            .get(format!("{}{path}", self.url))
            .bearer_auth(&self.token)
    }

    pub fn post(&self, path: &str, body: Value) -> reqwest::RequestBuilder {
        self.http
            .post(format!("{}{path}", self.url))
            .bearer_auth(&self.token)
            .json(&body)
    }

    pub fn request(&self, method: &str, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method.parse().unwrap(), format!("{}{path}", self.url))
            .bearer_auth(&self.token)
    }

    /// Sends a request (with a JSON body, if given) and reads the answer:
    /// its status and JSON (a string when it is not JSON).
    pub async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut request = self.request(method, path);
        if let Some(body) = body {
            request = request.json(&body);
        }
        answer(request.send().await.unwrap()).await
    }

    /// Posts a multipart body (`content_type` names its boundary).
    pub async fn upload(&self, path: &str, content_type: String, body: Vec<u8>) -> (u16, Value) {
        let request = self
            .request("POST", path)
            .header("content-type", content_type)
            .body(body);
        answer(request.send().await.unwrap()).await
    }

    pub fn stop(&mut self) -> std::process::ExitStatus {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        self.child.wait().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

async fn answer(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// One server-sent event.
#[derive(Debug, Clone)]
pub struct Sse {
    pub id: u64,
    pub kind: String,
    pub data: Value,
}

/// Reads the session's event stream (after `last`, if given) until `stop`
/// holds for an event; returns every event read.
pub async fn read_events(
    server: &Server,
    session: &str,
    last: Option<u64>,
    stop: impl Fn(&Sse) -> bool,
) -> Vec<Sse> {
    let mut request = server.get(&format!("/api/sessions/{session}/events"));
    if let Some(last) = last {
        request = request.header("Last-Event-ID", last.to_string());
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let mut stream = response.bytes_stream();
    let mut buffer = String::new();
    let mut out = Vec::new();
    let read = async {
        while let Some(chunk) = stream.next().await {
            buffer.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
            while let Some(end) = buffer.find("\n\n") {
                let frame: String = buffer.drain(..end + 2).collect();
                let mut event = Sse {
                    id: 0,
                    kind: String::new(),
                    data: Value::Null,
                };
                for line in frame.lines() {
                    if let Some(v) = line.strip_prefix("id: ").or(line.strip_prefix("id:")) {
                        event.id = v.trim().parse().unwrap();
                    } else if let Some(v) =
                        line.strip_prefix("event: ").or(line.strip_prefix("event:"))
                    {
                        event.kind = v.trim().to_owned();
                    } else if let Some(v) =
                        line.strip_prefix("data: ").or(line.strip_prefix("data:"))
                    {
                        event.data = serde_json::from_str(v).unwrap();
                    }
                }
                if event.kind.is_empty() {
                    continue; // a keep-alive comment
                }
                let done = stop(&event);
                out.push(event);
                if done {
                    return;
                }
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), read)
        .await
        .unwrap_or_else(|_| panic!("timed out; events so far: {out:#?}"));
    out
}
