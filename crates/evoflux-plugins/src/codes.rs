//! Every stable diagnostic code this crate emits, in one place so that the
//! list can be reviewed and documented. Tests assert on the literal strings.

// package scope
/// The plugin root is missing or not a directory.
pub const ROOT_NOT_DIRECTORY: &str = "plugin/root-not-directory";
/// A file or folder of the package cannot be read.
pub const PACKAGE_UNREADABLE: &str = "plugin/package-unreadable";
/// Warning: a symbolic link resolves outside the plugin root (components
/// reading through it fail on their own; developer links refuse it).
pub const ESCAPING_SYMLINK: &str = "plugin/escaping-symlink";
/// Warning: a copy (install from a folder, pack) left a link out: it
/// escapes the root or names no file inside it.
pub const LINK_LEFT_OUT: &str = "plugin/link-left-out";
/// An entry that is neither a file, a folder nor a symlink (fifo, socket, device).
pub const UNSUPPORTED_ENTRY: &str = "plugin/unsupported-entry";
/// A path in the package is not valid UTF-8.
pub const PATH_NOT_UTF8: &str = "plugin/path-not-utf8";
/// More entries than the package limit.
pub const TOO_MANY_ENTRIES: &str = "plugin/too-many-entries";
/// More bytes than the package limit.
pub const PACKAGE_TOO_LARGE: &str = "plugin/package-too-large";

// manifest scope
pub const MANIFEST_MISSING: &str = "plugin/manifest-missing";
pub const MANIFEST_ESCAPES_ROOT: &str = "plugin/manifest-escapes-root";
pub const MANIFEST_NOT_FILE: &str = "plugin/manifest-not-file";
pub const MANIFEST_TOO_LARGE: &str = "plugin/manifest-too-large";
pub const MANIFEST_UNREADABLE: &str = "plugin/manifest-unreadable";
pub const MANIFEST_INVALID_JSON: &str = "plugin/manifest-invalid-json";
/// An object of `plugin.json` names one key twice (JSON would keep only
/// the last silently).
pub const MANIFEST_DUPLICATE_KEY: &str = "plugin/manifest-duplicate-key";
pub const MANIFEST_NOT_OBJECT: &str = "plugin/manifest-not-object";
pub const MANIFEST_SCHEMA_MISSING: &str = "plugin/manifest-schema-missing";
pub const MANIFEST_SCHEMA_UNSUPPORTED: &str = "plugin/manifest-schema-unsupported";
pub const MANIFEST_NAME_MISSING: &str = "plugin/manifest-name-missing";
pub const MANIFEST_NAME_INVALID: &str = "plugin/manifest-name-invalid";
/// A known optional field with the wrong type or shape (fatal).
pub const MANIFEST_FIELD_INVALID: &str = "plugin/manifest-field-invalid";
/// Warning: an unknown root field, ignored.
pub const MANIFEST_UNKNOWN_FIELD: &str = "plugin/manifest-unknown-field";
/// Warning: `extensions` is not an object, ignored.
pub const MANIFEST_EXTENSIONS_INVALID: &str = "plugin/manifest-extensions-invalid";
/// Warning: one `extensions` member has a non-namespace key or a non-object value, ignored.
pub const MANIFEST_EXTENSION_INVALID: &str = "plugin/manifest-extension-invalid";

/// Warning: the credentials extension declaration is invalid; the plugin
/// loads, but its credentials form is unusable until it is fixed.
pub const CREDENTIALS_DECLARATION_INVALID: &str = "plugin/credentials-declaration-invalid";

// skills scope
pub const SKILLS_NOT_DIRECTORY: &str = "plugin/skills-not-directory";
pub const SKILLS_ESCAPES_ROOT: &str = "plugin/skills-escapes-root";
/// Info: a folder under `skills/` without `SKILL.md` is not a skill.
pub const SKILL_MANIFEST_MISSING: &str = "plugin/skill-manifest-missing";
pub const SKILL_MANIFEST_NOT_FILE: &str = "plugin/skill-manifest-not-file";
pub const SKILL_ESCAPES_ROOT: &str = "plugin/skill-escapes-root";
pub const SKILL_TOO_LARGE: &str = "plugin/skill-too-large";
pub const SKILL_UNREADABLE: &str = "plugin/skill-unreadable";

// mcp scope
pub const MCP_ESCAPES_ROOT: &str = "plugin/mcp-escapes-root";
pub const MCP_NOT_FILE: &str = "plugin/mcp-not-file";
pub const MCP_TOO_LARGE: &str = "plugin/mcp-too-large";
pub const MCP_UNREADABLE: &str = "plugin/mcp-unreadable";
pub const MCP_INVALID_JSON: &str = "plugin/mcp-invalid-json";
/// An object of `mcp.json` names one key twice (a server listed twice).
pub const MCP_DUPLICATE_KEY: &str = "plugin/mcp-duplicate-key";
/// The document is not exactly `{"$schema", "mcpServers"}` with an object `mcpServers`.
pub const MCP_TOP_LEVEL_INVALID: &str = "plugin/mcp-top-level-invalid";
/// `$schema` is not a known mcp schema of the manifest's release.
pub const MCP_SCHEMA_UNSUPPORTED: &str = "plugin/mcp-schema-unsupported";

// mcp:<name> scope
/// Entry shape: not an object, missing/unknown `type`, unknown field, missing
/// required field, wrong value type.
pub const MCP_SERVER_INVALID: &str = "plugin/mcp-server-invalid";
pub const MCP_COMMAND_INVALID: &str = "plugin/mcp-command-invalid";
pub const MCP_CWD_INVALID: &str = "plugin/mcp-cwd-invalid";
/// `command` or `cwd` resolves outside the plugin root (or the data folder).
pub const MCP_PATH_ESCAPES: &str = "plugin/mcp-path-escapes";
pub const MCP_RESERVED_ENV: &str = "plugin/mcp-reserved-env";
pub const MCP_URL_INVALID: &str = "plugin/mcp-url-invalid";
pub const MCP_HEADER_INVALID: &str = "plugin/mcp-header-invalid";
pub const MCP_HEADER_DUPLICATE: &str = "plugin/mcp-header-duplicate";
/// Warning: a valid `sse` entry, reported and never started.
pub const MCP_TRANSPORT_UNSUPPORTED: &str = "plugin/mcp-transport-unsupported";

// import of a Claude Code plugin
/// Warning: a part of a Claude Code plugin has no portable form and was
/// left out of the imported package (commands, agents, hooks, a server
/// that needs the user's environment, an unknown key).
pub const IMPORT_LEFT_OUT: &str = "plugin/import-left-out";
