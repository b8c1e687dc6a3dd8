//! Sessions' artifacts (command journals, offloaded results, records) in
//! an object store, so every replica serves what any replica's turns
//! wrote.
//!
//! The runtime writes artifacts to `<data>/artifacts/<session>/` as a turn
//! runs; that folder is the replica's working copy. When a turn ends, the
//! replica that ran it copies what is new or changed there to the object
//! store ([`Artifacts::upload_session`]), and a replica asked for an
//! artifact it does not have reads it from there ([`Artifacts::open`]).
//! Both directions stream in chunks: no artifact is ever whole in memory.
//! The default is no object store: the data directory's folder is all
//! there is, as on one machine.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use evoflux_core::ids::SessionId;
use futures_util::stream::BoxStream;
use futures_util::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, WriteMultipart};
use tokio::io::AsyncReadExt;

use crate::error::StoreError;

/// How much of a file one part of an upload carries.
const CHUNK: usize = 5 * 1024 * 1024;

/// Where artifacts are kept beside the data directory's working copies.
#[derive(Debug, Clone)]
pub struct Artifacts {
    store: Arc<dyn ObjectStore>,
    /// The key prefix every session's folder is under.
    prefix: ObjectPath,
    /// What this process uploaded (path → length), so a turn's end copies
    /// only what changed.
    uploaded: Arc<Mutex<HashMap<PathBuf, u64>>>,
    described: String,
}

fn error(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Artifacts {
        detail: format!("{what}: {e}"),
    }
}

impl Artifacts {
    /// Opens the object store `url` names: `s3://bucket/prefix` (its
    /// endpoint, region and credentials from the usual `AWS_*`
    /// variables, so an S3-compatible server works), or `file:///dir`.
    pub fn open(url: &str) -> Result<Artifacts, StoreError> {
        let parsed = url::Url::parse(url).map_err(|e| StoreError::ArtifactsUrl {
            url: url.to_owned(),
            reason: e.to_string(),
        })?;
        let prefix = ObjectPath::from(parsed.path().trim_matches('/'));
        let store: Arc<dyn ObjectStore> = match parsed.scheme() {
            "s3" => Arc::new({
                // Its HTTP client speaks TLS through the process's provider.
                evoflux_core::tls::install_crypto_provider();
                object_store::aws::AmazonS3Builder::from_env()
                    .with_url(url)
                    .build()
                    .map_err(|e| StoreError::ArtifactsUrl {
                        url: url.to_owned(),
                        reason: e.to_string(),
                    })?
            }),
            "file" => {
                let dir = PathBuf::from(parsed.path());
                std::fs::create_dir_all(&dir).map_err(|e| StoreError::ArtifactsUrl {
                    url: url.to_owned(),
                    reason: e.to_string(),
                })?;
                let local =
                    object_store::local::LocalFileSystem::new_with_prefix(&dir).map_err(|e| {
                        StoreError::ArtifactsUrl {
                            url: url.to_owned(),
                            reason: e.to_string(),
                        }
                    })?;
                return Ok(Artifacts {
                    store: Arc::new(local),
                    prefix: ObjectPath::default(),
                    uploaded: Arc::default(),
                    described: url.to_owned(),
                });
            }
            other => {
                return Err(StoreError::ArtifactsUrl {
                    url: url.to_owned(),
                    reason: format!(
                        "`{other}` is not an object store evoflux keeps artifacts in; use s3://bucket/prefix or file:///dir"
                    ),
                });
            }
        };
        Ok(Artifacts {
            store,
            prefix,
            uploaded: Arc::default(),
            described: url.to_owned(),
        })
    }

    /// The store as configured, for messages.
    pub fn describe(&self) -> &str {
        &self.described
    }

    fn key(&self, session: SessionId, relative: &Path) -> Result<ObjectPath, StoreError> {
        let mut parts: Vec<String> = self.prefix.parts().map(|p| p.as_ref().to_owned()).collect();
        parts.push(session.to_string());
        for c in relative.components() {
            match c {
                std::path::Component::Normal(part) => {
                    parts.push(part.to_string_lossy().into_owned())
                }
                // Locators are relative paths inside the session's folder.
                std::path::Component::CurDir => {}
                std::path::Component::ParentDir
                | std::path::Component::RootDir
                | std::path::Component::Prefix(_) => {
                    return Err(error("artifact path", relative.display()));
                }
            }
        }
        Ok(ObjectPath::from_iter(parts))
    }

    /// Copies what is new or changed in `folder` (the session's working
    /// copy) to the store, file by file, each streamed in parts. Returns
    /// how many files were copied.
    pub async fn upload_session(
        &self,
        session: SessionId,
        folder: &Path,
    ) -> Result<usize, StoreError> {
        let files = files_below(folder);
        let mut copied = 0;
        for (relative, len) in files {
            let absolute = folder.join(&relative);
            let unchanged = self
                .uploaded
                .lock()
                .map(|u| u.get(&absolute) == Some(&len))
                .unwrap_or(false);
            if unchanged {
                continue;
            }
            let key = self.key(session, &relative)?;
            let mut file = tokio::fs::File::open(&absolute)
                .await
                .map_err(|e| error("read artifact", e))?;
            let upload = self
                .store
                .put_multipart(&key)
                .await
                .map_err(|e| error("upload artifact", e))?;
            let mut writer = WriteMultipart::new_with_chunk_size(upload, CHUNK);
            let mut buf = vec![0u8; 256 * 1024];
            let mut sent = 0u64;
            loop {
                let n = file
                    .read(&mut buf)
                    .await
                    .map_err(|e| error("read artifact", e))?;
                if n == 0 {
                    break;
                }
                writer
                    .wait_for_capacity(2)
                    .await
                    .map_err(|e| error("upload artifact", e))?;
                writer.write(&buf[..n]);
                sent += n as u64;
            }
            writer
                .finish()
                .await
                .map_err(|e| error("upload artifact", e))?;
            if let Ok(mut u) = self.uploaded.lock() {
                u.insert(absolute, sent);
            }
            copied += 1;
        }
        Ok(copied)
    }

    /// The artifact at `relative` in `session`'s folder, as a stream of
    /// chunks; `None` when the store has none.
    pub async fn read(
        &self,
        session: SessionId,
        relative: &Path,
    ) -> Result<Option<BoxStream<'static, Result<Bytes, std::io::Error>>>, StoreError> {
        let key = self.key(session, relative)?;
        match self.store.get(&key).await {
            Ok(got) => Ok(Some(
                got.into_stream().map_err(std::io::Error::other).boxed(),
            )),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(error("read artifact", e)),
        }
    }

    /// Removes every artifact of `session` from the store.
    pub async fn delete_session(&self, session: SessionId) -> Result<(), StoreError> {
        let prefix = self.key(session, Path::new(""))?;
        let keys: Vec<ObjectPath> = self
            .store
            .list(Some(&prefix))
            .map_ok(|meta| meta.location)
            .try_collect()
            .await
            .map_err(|e| error("list artifacts", e))?;
        for key in keys {
            match self.store.delete(&key).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(error("delete artifact", e)),
            }
        }
        Ok(())
    }
}

/// Every regular file below `root`, relative to it, with its length; none
/// when it is missing. Links are not followed: a session's folders hold
/// files the runtime wrote.
pub(crate) fn files_below(root: &Path) -> Vec<(PathBuf, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file()
                && let (Ok(relative), Ok(meta)) = (path.strip_prefix(root), entry.metadata())
            {
                out.push((relative.to_path_buf(), meta.len()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use evoflux_core::ids::Ids;

    #[tokio::test]
    async fn a_session_s_artifacts_go_up_once_come_back_streamed_and_go_with_it() {
        let tmp = tempfile::tempdir().unwrap();
        let bucket = tmp.path().join("bucket");
        let url = format!("file://{}", bucket.display());
        let artifacts = Artifacts::open(&url).unwrap();
        let session = Ids::sequential().session_id();
        let folder = tmp.path().join("work");
        std::fs::create_dir_all(folder.join("commands")).unwrap();
        let big = vec![b'x'; CHUNK + 17];
        std::fs::write(folder.join("commands/proc_1.txt"), &big).unwrap();
        std::fs::write(folder.join("result.txt"), b"short").unwrap();
        assert_eq!(artifacts.upload_session(session, &folder).await.unwrap(), 2);
        assert_eq!(
            artifacts.upload_session(session, &folder).await.unwrap(),
            0,
            "nothing changed"
        );
        std::fs::write(folder.join("result.txt"), b"longer now").unwrap();
        assert_eq!(artifacts.upload_session(session, &folder).await.unwrap(), 1);
        let stream = artifacts
            .read(session, Path::new("commands/proc_1.txt"))
            .await
            .unwrap()
            .unwrap();
        let chunks: Vec<Bytes> = stream.try_collect().await.unwrap();
        assert_eq!(chunks.concat(), big);
        assert!(
            artifacts
                .read(session, Path::new("nope"))
                .await
                .unwrap()
                .is_none()
        );
        let Err(e) = artifacts.read(session, Path::new("../x")).await else {
            panic!("a path out of the session's folder is refused");
        };
        assert_eq!(e.code(), "store/artifacts");
        artifacts.delete_session(session).await.unwrap();
        assert!(
            artifacts
                .read(session, Path::new("result.txt"))
                .await
                .unwrap()
                .is_none()
        );
        assert_eq!(
            Artifacts::open("ftp://x/y").unwrap_err().code(),
            "store/artifacts-url"
        );
    }
}
