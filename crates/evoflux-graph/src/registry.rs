//! Builtin registries: framework sources compiled into the binary.
//!
//! A registry is immutable and lists modules by logical path, each with a
//! lazy constructor. Discovery turns every module into a candidate without
//! calling anything; the composer calls a constructor only for a module
//! that won its slot, so a shadowed framework default is never built.

use evoflux_core::config::LoadedConfig;

use crate::channel;
use crate::compose::Definition;
use crate::sandbox::SandboxPolicy;
use crate::tool;

/// One framework module.
#[derive(Debug, Clone)]
pub struct BuiltinModule {
    /// Logical path, such as `tools/shell.toml`.
    pub logical_path: String,
    /// The framework feature that owns it.
    pub feature: &'static str,
    /// A revision that survives unrelated upgrades, when durable state
    /// depends on the module's identity.
    pub semantic_revision: Option<&'static str>,
    /// Builds the definition. Called only for winners.
    pub construct: fn(&str) -> Option<Definition>,
}

/// An immutable set of framework modules.
#[derive(Debug, Clone)]
pub struct BuiltinRegistry {
    pub id: String,
    /// Pinned into every binding; a graph compiled against another revision
    /// is rejected at load.
    pub revision: String,
    pub modules: Vec<BuiltinModule>,
    /// The templates it registers: only these may be instantiated into
    /// derived candidates ([`crate::derive`]).
    pub templates: Vec<crate::derive::Template>,
}

/// The revision of the framework registry: crate version plus graph format.
pub fn framework_revision() -> String {
    format!(
        "evoflux@{}:graph-v{}",
        env!("CARGO_PKG_VERSION"),
        crate::graph::FORMAT_VERSION
    )
}

fn tool_module(name: &str) -> BuiltinModule {
    BuiltinModule {
        logical_path: format!("tools/{name}.toml"),
        feature: "tools",
        semantic_revision: None,
        construct: |path| {
            let name = path.strip_prefix("tools/")?.strip_suffix(".toml")?;
            tool::framework_tool(name).map(Definition::Tool)
        },
    }
}

impl BuiltinRegistry {
    /// The framework defaults: config, sandbox, the `api` and `home`
    /// channels and the framework tools.
    pub fn framework() -> BuiltinRegistry {
        let mut modules = vec![
            BuiltinModule {
                logical_path: "config.toml".into(),
                feature: "config",
                semantic_revision: None,
                construct: |_| Some(Definition::Config(LoadedConfig::embedded())),
            },
            BuiltinModule {
                logical_path: "sandbox.toml".into(),
                feature: "sandbox",
                semantic_revision: Some("evoflux:default-sandbox:v2"),
                construct: |_| Some(Definition::Sandbox(SandboxPolicy::framework_default())),
            },
            BuiltinModule {
                logical_path: "channels/api.toml".into(),
                feature: "http-api",
                semantic_revision: None,
                construct: |_| Some(Definition::Channel(channel::framework_api())),
            },
            BuiltinModule {
                logical_path: "channels/home.toml".into(),
                feature: "web-ui",
                semantic_revision: None,
                construct: |_| Some(Definition::Channel(channel::framework_home())),
            },
        ];
        modules.extend(tool::FRAMEWORK_TOOLS.iter().map(|name| tool_module(name)));
        BuiltinRegistry {
            id: "evoflux:defaults".into(),
            revision: framework_revision(),
            modules,
            templates: crate::derive::Template::ALL.to_vec(),
        }
    }

    pub fn module(&self, logical_path: &str) -> Option<&BuiltinModule> {
        self.modules.iter().find(|m| m.logical_path == logical_path)
    }

    /// Whether the registry registers `template`.
    pub fn registers(&self, template: crate::derive::Template) -> bool {
        self.templates.contains(&template)
    }
}
