//! Canonical JSON and content hashes.
//!
//! Every content hash in evoflux (graph hashes, module identity, plugin
//! digests, fingerprints) is SHA-256 over the canonical JSON of a value, so
//! two equal values hash equally no matter how their maps were ordered or
//! how they were pretty-printed. There is one function for it:
//! [`content_hash`].

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// A value could not be turned into JSON (a map with non-string keys, a
/// failing `Serialize` impl).
#[derive(Debug, thiserror::Error)]
#[error("value cannot be hashed as JSON: {0}")]
pub struct HashError(#[from] serde_json::Error);

/// Lowercase hex SHA-256 digest.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ContentHash(String);

impl ContentHash {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ContentHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Canonical JSON text of `value`: object keys sorted by their UTF-8 bytes,
/// no insignificant whitespace, numbers and strings as `serde_json` writes
/// them.
pub fn canonical_json<T: Serialize + ?Sized>(value: &T) -> Result<String, HashError> {
    let value = serde_json::to_value(value)?;
    let mut out = String::new();
    write_canonical(&value, &mut out)?;
    Ok(out)
}

fn write_canonical(value: &Value, out: &mut String) -> Result<(), HashError> {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (key, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(key)?);
                out.push(':');
                write_canonical(v, out)?;
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(v, out)?;
            }
            out.push(']');
        }
        scalar => out.push_str(&serde_json::to_string(scalar)?),
    }
    Ok(())
}

/// SHA-256 of the canonical JSON of `value`: the one content hash.
pub fn content_hash<T: Serialize + ?Sized>(value: &T) -> Result<ContentHash, HashError> {
    Ok(sha256_hex(canonical_json(value)?.as_bytes()))
}

/// SHA-256 of raw bytes, for file bindings and package digests whose input
/// is already bytes rather than a value.
pub fn sha256_hex(bytes: &[u8]) -> ContentHash {
    ContentHash(hex::encode(Sha256::digest(bytes)))
}

/// The largest file [`sha256_file`] reads: far past any program a server
/// is launched from, small enough that a file made huge to stall every
/// compile costs a moment.
pub const MAX_HASHED_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// SHA-256 of a regular file's bytes (through links), read in pieces;
/// anything else (a folder, a FIFO that would block the reader, a file
/// past [`MAX_HASHED_FILE_BYTES`]) is an error. The file is opened without
/// blocking and checked once open, so one swapped in for it after a look
/// at its name cannot hang the reader.
pub fn sha256_file(path: &std::path::Path) -> std::io::Result<ContentHash> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    if meta.len() > MAX_HASHED_FILE_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("larger than {MAX_HASHED_FILE_BYTES} bytes"),
        ));
    }
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    // A file growing while it is read is cut at the same bound.
    let mut left = MAX_HASHED_FILE_BYTES + 1;
    while left > 0 {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                hasher.update(&buf[..n]);
                left = left.saturating_sub(n as u64);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    if left == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("larger than {MAX_HASHED_FILE_BYTES} bytes"),
        ));
    }
    Ok(ContentHash(hex::encode(hasher.finalize())))
}

#[cfg(test)]
mod file_hash_tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_without_blocking_and_a_file_is_hashed() {
        let dir = std::env::temp_dir().join(format!("evoflux-hash-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let err = sha256_file(&fifo).unwrap_err();
            assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
        }
        let file = dir.join("f");
        std::fs::write(&file, b"abc").unwrap();
        assert_eq!(sha256_file(&file).unwrap(), sha256_hex(b"abc"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    #[test]
    fn keys_sorted_and_no_whitespace() {
        let v: Value =
            serde_json::from_str(r#"{ "b": [1, {"z": null, "a": true}], "a": "x y", "A": 1.5 }"#)
                .unwrap();
        assert_eq!(
            canonical_json(&v).unwrap(),
            r#"{"A":1.5,"a":"x y","b":[1,{"a":true,"z":null}]}"#
        );
    }

    #[test]
    fn equal_hash_for_differently_ordered_maps() {
        let a: Value = serde_json::from_str(r#"{"name":"x","deps":{"b":2,"a":1}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"deps":{"a":1,"b":2},"name":"x"}"#).unwrap();
        assert_eq!(content_hash(&a).unwrap(), content_hash(&b).unwrap());

        // A struct and a map with the same content hash equally.
        #[derive(Serialize)]
        struct S {
            name: &'static str,
            deps: BTreeMap<&'static str, i32>,
        }
        let s = S {
            name: "x",
            deps: [("a", 1), ("b", 2)].into(),
        };
        assert_eq!(content_hash(&s).unwrap(), content_hash(&a).unwrap());

        let c = json!({"name": "x", "deps": {"a": 1, "b": 3}});
        assert_ne!(content_hash(&c).unwrap(), content_hash(&a).unwrap());
    }

    #[test]
    fn sha256_known_vector() {
        assert_eq!(
            sha256_hex(b"abc").as_str(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        // The hash of a value is the hash of its canonical text.
        let v = json!({"b": 1, "a": [true]});
        assert_eq!(
            content_hash(&v).unwrap(),
            sha256_hex(br#"{"a":[true],"b":1}"#)
        );
    }

    #[test]
    fn non_string_keys_are_an_error_not_a_panic() {
        let mut m = BTreeMap::new();
        m.insert(vec![1u8], 1);
        assert!(content_hash(&m).is_err());
    }

    #[test]
    fn strings_are_escaped_canonically() {
        let v = json!({"k\"ey": "line\nbreak \u{1F600}"});
        assert_eq!(
            canonical_json(&v).unwrap(),
            "{\"k\\\"ey\":\"line\\nbreak \u{1F600}\"}"
        );
    }
}
