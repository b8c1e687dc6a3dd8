//! Fixture plugins written to temp folders.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};

use evoflux_plugins::{
    MCP_SCHEMA_1_0_0, PLUGIN_SCHEMA_1_0_0, PluginInspection, StrictSkillValidator, inspect,
};
use serde_json::{Value, json};

pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
}

impl Fixture {
    /// An empty plugin folder `my-plugin` inside a fresh temp dir.
    pub fn empty() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().join("my-plugin");
        fs::create_dir(&root).unwrap();
        Fixture { dir, root }
    }

    /// A plugin with the minimal valid manifest.
    pub fn minimal() -> Fixture {
        let f = Fixture::empty();
        f.manifest(json!({"$schema": PLUGIN_SCHEMA_1_0_0, "name": "my-plugin"}));
        f
    }

    pub fn write(&self, rel: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, contents).unwrap();
        path
    }

    pub fn manifest(&self, v: Value) {
        self.write("plugin.json", serde_json::to_vec_pretty(&v).unwrap());
    }

    pub fn skill(&self, dir: &str, name: &str) {
        self.write(
            &format!("skills/{dir}/SKILL.md"),
            format!("---\nname: {name}\ndescription: Does {name} things.\n---\n# {name}\n"),
        );
    }

    /// `mcp.json` with the canonical `$schema` and these servers.
    pub fn mcp_servers(&self, servers: Value) {
        self.write(
            "mcp.json",
            serde_json::to_vec_pretty(&json!({"$schema": MCP_SCHEMA_1_0_0, "mcpServers": servers}))
                .unwrap(),
        );
    }

    #[cfg(unix)]
    pub fn symlink(&self, target: impl AsRef<Path>, rel: &str) {
        let link = self.root.join(rel);
        fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, link).unwrap();
    }

    pub fn inspect(&self) -> PluginInspection {
        inspect(&self.root, &StrictSkillValidator)
    }
}

/// Every code reported in `scope`, in order.
pub fn codes_in(i: &PluginInspection, scope: &str) -> Vec<String> {
    i.diagnostics
        .iter()
        .filter(|d| d.scope.to_string() == scope)
        .map(|d| d.code().to_owned())
        .collect()
}

pub fn all_codes(i: &PluginInspection) -> Vec<String> {
    i.diagnostics.iter().map(|d| d.code().to_owned()).collect()
}
