//! What is stored beside a tool result: one typed record instead of a JSON
//! map whose keys every reader had to know.
//!
//! The same value goes into the transcript (the store keeps it as JSON,
//! beside the message) and into the live `tool_ended` event, so a reloaded
//! session shows what the live one did. Its JSON shape is the flat object
//! readers already see: a command's observation (`process_id`, `status`,
//! `artifact`, byte counts), an offloaded result's file and sizes, a skill
//! activation under `skill_activation`, a reused observation under
//! `observation`, what an `edit` or `write` changed under `change` (for a
//! front end's diff; never part of what the model reads).

use std::path::{Path, PathBuf};

use crate::command::CommandMeta;
use serde::{Deserialize, Serialize};

/// The metadata of one tool result. Each part is set by the one owner that
/// produces it; parts are boxed so a result without metadata stays small.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ResultMetadata {
    /// A command's observation: `shell`, `process`, command tools, a
    /// user's `!command`, an exit notice.
    #[serde(flatten)]
    pub command: Option<Box<CommandMeta>>,
    /// A large result moved to a file, with a preview in its place.
    #[serde(flatten)]
    pub offload: Option<Box<Offloaded>>,
    /// A skill activation, to re-apply its runtime contract on resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill_activation: Option<Box<ActivationRecord>>,
    /// A read answered by pointing at an earlier, still visible result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<Box<ObservationReuse>>,
    /// What an `edit` or `write` changed in its file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<Box<FileChange>>,
}

/// The flat parts share one JSON object and some keys (`artifact`, the byte
/// counts), so each is read from the whole object on its own — serde's
/// `flatten` would hand a key to the first part that claims it.
impl<'de> Deserialize<'de> for ResultMetadata {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ResultMetadata, D::Error> {
        #[derive(Deserialize)]
        struct Keyed {
            #[serde(default)]
            skill_activation: Option<Box<ActivationRecord>>,
            #[serde(default)]
            observation: Option<Box<ObservationReuse>>,
            #[serde(default)]
            change: Option<Box<FileChange>>,
        }
        let value = serde_json::Value::deserialize(d)?;
        let command: Option<Box<CommandMeta>> = serde_json::from_value(value.clone()).ok();
        let offload: Option<Box<Offloaded>> = match command {
            Some(_) => None,
            None => serde_json::from_value(value.clone()).ok(),
        };
        let keyed: Keyed = serde_json::from_value(value).map_err(serde::de::Error::custom)?;
        Ok(ResultMetadata {
            command,
            offload,
            skill_activation: keyed.skill_activation,
            observation: keyed.observation,
            change: keyed.change,
        })
    }
}

impl ResultMetadata {
    /// The file that holds the result's complete text, when there is one.
    pub fn artifact(&self) -> Option<&Path> {
        match (&self.command, &self.offload) {
            (Some(c), _) => Some(&c.artifact),
            (None, Some(o)) => Some(&o.artifact),
            (None, None) => None,
        }
    }

    /// Reads what the store kept beside a message. A record this build
    /// cannot read (written by a newer one) counts as none.
    pub fn from_stored(value: &serde_json::Value) -> Option<ResultMetadata> {
        serde_json::from_value(value.clone()).ok()
    }

    /// The JSON the store keeps.
    pub fn to_stored(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

/// Where an offloaded result went and how much of it the preview shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offloaded {
    /// Always `true`: marks the record in its flat JSON.
    pub offloaded: bool,
    pub artifact: PathBuf,
    pub lines: usize,
    pub chars: usize,
    pub output_bytes: usize,
    pub shown_bytes: usize,
    pub omitted_bytes: usize,
}

/// What an `edit` or `write` changed in one file, for a front end to show
/// as a diff. The model never reads it: its result's text says what it did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// The file as the workspace shows it (relative to its root, or
    /// absolute when several roots make a relative path ambiguous).
    pub path: String,
    /// The call created the file (every line is added).
    pub created: bool,
    /// A unified diff: `--- a/<path>`, `+++ b/<path>`, `@@` hunks with 3
    /// lines of context; empty when the content did not change.
    pub diff: String,
    /// Lines added and removed by the whole change, also when `diff` was
    /// cut.
    pub added: u32,
    pub removed: u32,
    /// `diff` was cut at its size limit (at a line's end).
    pub truncated: bool,
}

/// A repeated read answered by the observation-receipts owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservationReuse {
    /// What was observed (`source` for file reads).
    pub kind: String,
    pub reused: bool,
    pub original_call_id: String,
    pub result_sha256: String,
    /// The lines the earlier result shows, when only part of it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covered_range: Option<[u64; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_range: Option<[u64; 2]>,
}

/// Who activated a skill; the prefix of a synthetic pair's call id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActivationSource {
    /// The model called the skill tool.
    Tool,
    /// Assigned to the agent (`skills:`), preloaded.
    Configured,
    /// Named by the user with `$name` or `/skill:name`.
    Explicit,
    /// Picked by the implicit resolver.
    Resolved,
}

impl ActivationSource {
    pub const fn as_str(self) -> &'static str {
        match self {
            ActivationSource::Tool => "tool",
            ActivationSource::Configured => "configured",
            ActivationSource::Explicit => "explicit",
            ActivationSource::Resolved => "resolved",
        }
    }
}

/// What is stored beside a successful activation's tool result: enough to
/// re-apply the same runtime contract on resume.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivationRecord {
    pub skill: String,
    pub revision: String,
    pub source: ActivationSource,
    pub bundle_dir: String,
    /// Built-in tools the skill declared (all exist in the session).
    pub required_tools: Vec<String>,
    /// The subset that this activation had to turn on (deferred or not
    /// offered before).
    pub activated_tools: Vec<String>,
    /// The plugin installation whose MCP servers the load granted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_installation: Option<String>,
    /// Bytes of the rendered activation the model sees.
    pub bytes: usize,
}

impl ActivationRecord {
    /// The metadata stored beside the activation's tool result.
    pub fn to_metadata(&self) -> ResultMetadata {
        ResultMetadata {
            skill_activation: Some(Box::new(self.clone())),
            ..ResultMetadata::default()
        }
    }

    pub fn from_metadata(metadata: &ResultMetadata) -> Option<ActivationRecord> {
        metadata.skill_activation.as_deref().cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_part_round_trips_through_its_flat_json() {
        let offloaded = json!({
            "offloaded": true, "artifact": "/a/c1.txt", "lines": 3, "chars": 9,
            "output_bytes": 9, "shown_bytes": 4, "omitted_bytes": 5,
        });
        let m = ResultMetadata::from_stored(&offloaded).unwrap();
        assert!(m.command.is_none());
        assert_eq!(m.artifact(), Some(Path::new("/a/c1.txt")));
        assert_eq!(m.to_stored(), offloaded);

        let reuse = json!({"observation": {
            "kind": "source", "reused": true, "original_call_id": "c1",
            "result_sha256": "ab", "covered_range": [1, 9], "requested_range": [2, 3],
        }});
        let m = ResultMetadata::from_stored(&reuse).unwrap();
        assert!(m.offload.is_none() && m.command.is_none());
        assert_eq!(m.artifact(), None);
        assert_eq!(m.to_stored(), reuse);
        assert_eq!(ResultMetadata::default().to_stored(), json!({}));

        let command = json!({
            "process_id": "proc_1", "pid": 7, "status": "succeeded", "exit_code": 0,
            "duration_ms": 1, "artifact": "/x/proc_1.txt", "output_offset": 0,
            "output_bytes": 10, "shown_bytes": 10, "omitted_bytes": 0,
        });
        let m = ResultMetadata::from_stored(&command).unwrap();
        assert!(m.command.is_some() && m.offload.is_none());
        assert_eq!(m.artifact(), Some(Path::new("/x/proc_1.txt")));
        assert_eq!(m.to_stored(), command);
    }

    #[test]
    fn file_change_round_trips_and_is_left_out_when_absent() {
        let change = FileChange {
            path: "src/a.rs".into(),
            created: false,
            diff: "--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1 +1 @@\n-x\n+y\n".into(),
            added: 1,
            removed: 1,
            truncated: false,
        };
        let with = ResultMetadata {
            change: Some(Box::new(change.clone())),
            ..ResultMetadata::default()
        };
        let stored = with.to_stored();
        assert_eq!(
            stored,
            json!({"change": {
                "path": "src/a.rs", "created": false,
                "diff": "--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1 +1 @@\n-x\n+y\n",
                "added": 1, "removed": 1, "truncated": false,
            }})
        );
        let back = ResultMetadata::from_stored(&stored).unwrap();
        assert_eq!(back, with);
        assert!(back.command.is_none() && back.offload.is_none());

        // Without a change the key is not written, and reads back as none.
        let without = ResultMetadata::default();
        assert!(without.to_stored().get("change").is_none());
        assert_eq!(
            ResultMetadata::from_stored(&without.to_stored()).unwrap(),
            without
        );

        // Beside an offload, both parts survive.
        let offloaded = json!({
            "offloaded": true, "artifact": "/a/c1.txt", "lines": 3, "chars": 9,
            "output_bytes": 9, "shown_bytes": 4, "omitted_bytes": 5,
            "change": stored["change"].clone(),
        });
        let m = ResultMetadata::from_stored(&offloaded).unwrap();
        assert!(m.offload.is_some());
        assert_eq!(m.change.as_deref(), Some(&change));
        assert_eq!(m.to_stored(), offloaded);
    }
}
