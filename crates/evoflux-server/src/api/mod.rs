//! The handlers of the framework API channel, one module per area.

pub mod agents;
pub mod highlight;
pub mod lists;
pub mod mcp;
pub mod mcp_oauth;
pub mod plugins;
pub mod scheduler;
pub mod sessions;
pub mod skills;
pub mod system;
pub mod trust;
pub mod viewer;

use crate::error::ApiError;

/// Runs a blocking file-system operation (a bundle or package change) off
/// the async workers.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::internal("server/task-failed", e.to_string()))?
}
