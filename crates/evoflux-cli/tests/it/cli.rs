//! End-to-end tests of the real `evoflux` binary. Every run gets a cleared
//! environment with a temporary HOME, so nothing touches the real home.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

struct Env {
    home: tempfile::TempDir,
}

impl Env {
    fn new() -> Self {
        Env {
            home: tempfile::tempdir().unwrap(),
        }
    }

    fn home(&self) -> &Path {
        self.home.path()
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_evoflux"));
        cmd.env_clear().env("HOME", self.home()).args(args);
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    fn config_dir(&self) -> std::path::PathBuf {
        self.home().join(".config/evoflux")
    }

    fn write_config(&self, text: &str) {
        std::fs::create_dir_all(self.config_dir()).unwrap();
        std::fs::write(self.config_dir().join("config.toml"), text).unwrap();
    }
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn version_flag() {
    let out = Env::new().run(&["--version"]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("evoflux {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn paths_json_defaults_from_home() {
    let env = Env::new();
    let out = env.run(&["paths", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    let home = env.home();
    assert_eq!(
        v["config"]["path"],
        home.join(".config/evoflux").to_str().unwrap()
    );
    assert_eq!(
        v["data"]["path"],
        home.join(".local/share/evoflux").to_str().unwrap()
    );
    assert_eq!(
        v["cache"]["path"],
        home.join(".cache/evoflux").to_str().unwrap()
    );
    assert_eq!(v["admin"]["path"], "/etc/evoflux");
    for kind in ["config", "data", "cache"] {
        assert_eq!(v[kind]["source"], "home", "{kind}");
    }
    assert_eq!(v["admin"]["source"], "default");
}

#[test]
fn paths_json_honours_each_environment_override() {
    let env = Env::new();
    for (var, kind) in [
        ("EVOFLUX_CONFIG_DIR", "config"),
        ("EVOFLUX_DATA_DIR", "data"),
        ("EVOFLUX_CACHE_DIR", "cache"),
        ("EVOFLUX_ADMIN_DIR", "admin"),
    ] {
        let dir = env.home().join(format!("custom-{kind}"));
        let out = env
            .cmd(&["--json", "paths"])
            .env(var, &dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let v = json(&out);
        assert_eq!(v[kind]["path"], dir.to_str().unwrap(), "{var}");
        assert_eq!(v[kind]["source"], "env", "{var}");
        assert_eq!(v[kind]["variable"], var);
        // The others are untouched.
        for other in ["config", "data", "cache", "admin"]
            .iter()
            .filter(|k| **k != kind)
        {
            assert_ne!(v[*other]["source"], "env", "{var} leaked into {other}");
        }
    }
}

#[test]
fn paths_honours_xdg_and_reports_it_in_text() {
    let env = Env::new();
    let xdg = env.home().join("xdg-data");
    let out = env
        .cmd(&["paths"])
        .env("XDG_DATA_HOME", &xdg)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let data_line = text.lines().find(|l| l.starts_with("data")).unwrap();
    assert!(
        data_line.contains(xdg.join("evoflux").to_str().unwrap()),
        "{text}"
    );
    assert!(data_line.ends_with("($XDG_DATA_HOME)"), "{text}");
}

#[test]
fn relative_override_fails_with_a_diagnostic() {
    let env = Env::new();
    let out = env
        .cmd(&["paths"])
        .env("EVOFLUX_DATA_DIR", "relative/data")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.starts_with("error[paths/not-absolute]:"), "{err}");
    assert!(err.contains("EVOFLUX_DATA_DIR"), "{err}");

    let out = env
        .cmd(&["--json", "paths"])
        .env("EVOFLUX_DATA_DIR", "relative/data")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(v["diagnostics"][0]["code"], "paths/not-absolute");
}

#[test]
fn usage_errors_exit_2() {
    let env = Env::new();
    assert_eq!(env.run(&["no-such-command"]).status.code(), Some(2));
    assert_eq!(env.run(&["config"]).status.code(), Some(2));
    assert_eq!(env.run(&["paths", "--bogus"]).status.code(), Some(2));
    assert_eq!(env.run(&["--help"]).status.code(), Some(0));
}

#[test]
fn config_show_without_file_prints_embedded_defaults() {
    let env = Env::new();
    let out = env.run(&["config", "show", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["file"], Value::Null);
    assert_eq!(
        v["config"]["model"]["default"],
        "local:smollm2-135m-instruct"
    );
    assert_eq!(v["model_origin"], "embedded");
    assert_eq!(v["config"]["providers"]["openai"]["kind"], "openai");

    let out = env.run(&["config", "show"]);
    let text = String::from_utf8_lossy(&out.stdout).replace(env.home().to_str().unwrap(), "$HOME");
    insta::assert_snapshot!(text, @r#"
    # no config file at $HOME/.config/evoflux/config.toml: embedded defaults

    [model] # embedded default
    default = "local:smollm2-135m-instruct"

    [providers.anthropic] # embedded default
    kind = "anthropic"
    base_url = "https://api.anthropic.com"
    api_key_env = "ANTHROPIC_API_KEY"

    [providers.local] # embedded default
    kind = "local"
    context_window = 8192

    [providers.openai] # embedded default
    kind = "openai"
    base_url = "https://api.openai.com/v1"
    api_key_env = "OPENAI_API_KEY"

    [providers.scripted] # embedded default
    kind = "scripted"
    "#);
}

#[test]
fn config_show_reflects_the_file() {
    let env = Env::new();
    env.write_config(
        "[model]\ndefault = \"ollama:qwen2.5:7b\"\n\n[providers.ollama]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:11434/v1\"\n",
    );
    let out = env.run(&["config", "show", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["config"]["model"]["default"], "ollama:qwen2.5:7b");
    assert_eq!(v["model_origin"], "user");
    assert_eq!(v["provider_origins"]["ollama"], "user");
    assert_eq!(v["provider_origins"]["openai"], "embedded");
}

#[test]
fn config_check_ok_with_and_without_file() {
    let env = Env::new();
    let out = env.run(&["config", "check"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("embedded defaults apply"));

    env.write_config("[model]\ndefault = \"openai:gpt-4o-mini\"\n");
    let out = env.run(&["config", "check", "--json"]);
    assert!(out.status.success());
    let v = json(&out);
    assert_eq!(v["ok"], true);
    assert_eq!(v["exists"], true);
    assert_eq!(v["diagnostics"], serde_json::json!([]));
}

#[test]
fn config_check_reports_every_error_and_exits_3() {
    let env = Env::new();
    env.write_config(
        "[model]\ndefault = \"missing:x\"\ntemprature = 1\n\n[providers.oops]\nkind = \"openai\"\nbase_url = \"ftp://host\"\n",
    );
    let out = env.run(&["config", "check", "--json"]);
    assert_eq!(out.status.code(), Some(3));
    let v = json(&out);
    assert_eq!(v["ok"], false);
    let codes: Vec<&str> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        codes,
        [
            "config/unknown-key",
            "config/base-url-invalid",
            "config/provider-unknown"
        ]
    );
    assert_eq!(v["diagnostics"][0]["locator"]["field"], "model.temprature");

    let out = env.run(&["config", "check"]);
    assert_eq!(out.status.code(), Some(3));
    let err = stderr(&out);
    let file = env.config_dir().join("config.toml");
    assert!(err.contains("error[config/unknown-key]"), "{err}");
    assert!(err.contains(&format!("--> {}", file.display())), "{err}");
    assert!(err.trim_end().ends_with("3 errors, 0 warnings"), "{err}");

    // `show` refuses to print a configuration that would not run.
    assert_eq!(env.run(&["config", "show"]).status.code(), Some(3));
}

#[test]
fn config_syntax_error_points_at_the_line() {
    let env = Env::new();
    env.write_config("[model]\ndefault = \"openai:gpt-4o\"\n[providers\n");
    let out = env.run(&["config", "check"]);
    assert_eq!(out.status.code(), Some(3));
    let err = stderr(&out);
    assert!(err.contains("error[config/toml-invalid]"), "{err}");
    assert!(err.contains("config.toml:3"), "{err}");
}

#[test]
fn config_show_reports_the_composed_winner() {
    let env = Env::new();
    env.write_config("[model]\ndefault = \"openai:gpt-4o-mini\"\n");
    let repo = env.home().join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(repo.join(".evoflux")).unwrap();
    let project = repo.join(".evoflux/config.toml");
    std::fs::write(&project, "[model]\ndefault = \"anthropic:claude-sonnet\"\n").unwrap();
    let ws = repo.to_str().unwrap();
    let out = env.run(&["config", "show", "--json", "--workspace", ws]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["config"]["model"]["default"], "anthropic:claude-sonnet");
    assert_eq!(v["model_origin"], "project");
    let files: Vec<(&str, &str)> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["origin"].as_str().unwrap(), f["path"].as_str().unwrap()))
        .collect();
    let user = env.config_dir().join("config.toml");
    assert_eq!(
        files,
        [
            ("user", user.to_str().unwrap()),
            ("project", project.to_str().unwrap())
        ]
    );

    std::fs::write(
        &project,
        "[model]\ndefault = \"anthropic:claude-sonnet\"\nbogus = 1\n",
    )
    .unwrap();
    let out = env.run(&["config", "check", "--json", "--workspace", ws]);
    assert_eq!(out.status.code(), Some(3));
    let v = json(&out);
    assert_eq!(v["file"], project.to_str().unwrap());
    assert_eq!(v["diagnostics"][0]["code"], "config/unknown-key");
}

#[test]
fn model_list_shows_local_models_or_how_to_get_one() {
    let env = Env::new();
    let out = env.run(&["model", "list"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("no local models in"), "{text}");
    assert!(text.contains("fetch-local-model.sh"), "{text}");

    let models = env.home().join(".local/share/evoflux/models");
    std::fs::create_dir_all(&models).unwrap();
    std::fs::write(models.join("SmolLM2-135M-Instruct.Q4_1.gguf"), b"GGUF").unwrap();
    std::fs::write(models.join("tiny.gguf"), b"GGUF").unwrap();
    std::fs::write(models.join("notes.txt"), b"x").unwrap();
    let v = json(&env.run(&["model", "list", "--json"]));
    let names: Vec<&str> = v["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["model"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["local:smollm2-135m-instruct", "local:tiny.gguf"]);
}

#[test]
fn logs_go_to_stderr_filtered_by_evoflux_log_then_rust_log() {
    let env = Env::new();
    let with = |vars: &[(&str, &str)]| {
        let mut c = env.cmd(&["paths", "--json"]);
        for (k, v) in vars {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        // Logs never mix into the result on stdout.
        json(&out);
        stderr(&out)
    };
    // Default: warnings only, so a clean run prints nothing.
    assert_eq!(with(&[]), "");
    let debug = with(&[("EVOFLUX_LOG", "debug")]);
    assert!(debug.contains("directories resolved"), "{debug}");
    assert!(debug.contains("DEBUG"), "{debug}");
    assert!(
        !debug.contains('\u{1b}'),
        "no ANSI when not a terminal: {debug:?}"
    );
    assert!(with(&[("RUST_LOG", "debug")]).contains("directories resolved"));
    // EVOFLUX_LOG wins over RUST_LOG.
    assert_eq!(with(&[("EVOFLUX_LOG", "warn"), ("RUST_LOG", "debug")]), "");
    // A bad filter is reported, not fatal.
    let bad = with(&[("EVOFLUX_LOG", "evoflux=notalevel")]);
    assert!(bad.contains("ignoring the log filter"), "{bad}");
}
