//! The server's bearer token. Every route but the public ones (health,
//! readiness, the home page shell) requires `Authorization: Bearer <token>`.
//! The token is `EVOFLUX_SERVER_TOKEN` when set, else the one in
//! `<data>/server-token`, generated on first start with mode 0600. A
//! server on a non-loopback address needs one from the environment, of at
//! least [`PUBLIC_TOKEN_MIN_CHARS`] characters.

use std::path::{Path, PathBuf};

use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use evoflux_core::atomic::{AtomicOptions, write_atomic};

use crate::error::ApiError;

/// The file under the data dir that holds a generated token.
pub const TOKEN_FILE: &str = "server-token";
/// The environment variable that sets the token instead.
pub const TOKEN_ENV: &str = "EVOFLUX_SERVER_TOKEN";
/// Bytes of randomness in a generated token (hex-encoded).
const TOKEN_BYTES: usize = 32;
/// The fewest characters of a token that guards a non-loopback address.
pub const PUBLIC_TOKEN_MIN_CHARS: usize = 32;

/// The token requests must present.
#[derive(Clone)]
pub struct Token {
    secret: String,
    pub origin: TokenOrigin,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Token")
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

/// Where the token came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenOrigin {
    Environment,
    File(PathBuf),
    /// Generated now and written to the file.
    Generated(PathBuf),
}

/// Why the token cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("{TOKEN_ENV} is set but empty; set a secret or unset it")]
    EmptyEnv,
    #[error("cannot read the server token {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the server token file {} is empty; delete it to generate a new one", path.display())]
    EmptyFile { path: PathBuf },
    #[error("cannot write the server token {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl TokenError {
    pub fn code(&self) -> &'static str {
        match self {
            TokenError::EmptyEnv => "server/token-env-empty",
            TokenError::Read { .. } => "server/token-unreadable",
            TokenError::EmptyFile { .. } => "server/token-empty",
            TokenError::Write { .. } => "server/token-unwritable",
        }
    }
}

impl Token {
    /// `env` (the value of [`TOKEN_ENV`]) when given, else the data dir's
    /// token file, generated when absent.
    pub fn resolve(env: Option<String>, data_dir: &Path) -> Result<Token, TokenError> {
        if let Some(secret) = env {
            let secret = secret.trim().to_owned();
            if secret.is_empty() {
                return Err(TokenError::EmptyEnv);
            }
            return Ok(Token {
                secret,
                origin: TokenOrigin::Environment,
            });
        }
        let path = data_dir.join(TOKEN_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let secret = text.trim().to_owned();
                if secret.is_empty() {
                    return Err(TokenError::EmptyFile { path });
                }
                Ok(Token {
                    secret,
                    origin: TokenOrigin::File(path),
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let secret = hex::encode(rand::random::<[u8; TOKEN_BYTES]>());
                std::fs::create_dir_all(data_dir).map_err(|source| TokenError::Write {
                    path: path.clone(),
                    source,
                })?;
                write_atomic(
                    &path,
                    format!("{secret}\n").as_bytes(),
                    AtomicOptions::SECRET,
                )
                .map_err(|e| TokenError::Write {
                    path: path.clone(),
                    source: e.source,
                })?;
                Ok(Token {
                    secret,
                    origin: TokenOrigin::Generated(path),
                })
            }
            Err(source) => Err(TokenError::Read { path, source }),
        }
    }

    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// Whether `presented` is the token, in time independent of where the
    /// first difference is.
    pub fn matches(&self, presented: &str) -> bool {
        same_secret(self.secret.as_bytes(), presented.as_bytes())
    }
}

/// Whether two secrets are equal, in time independent of where the first
/// difference is (the length is not hidden).
pub(crate) fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Middleware: the request must carry the bearer token.
pub async fn require_token(State(token): State<Token>, request: Request, next: Next) -> Response {
    let presented = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match presented {
        Some(p) if token.matches(p.trim()) => next.run(request).await,
        Some(_) => ApiError::new(
            axum::http::StatusCode::UNAUTHORIZED,
            "server/token-invalid",
            format!(
                "the bearer token is not this server's: {TOKEN_ENV}, or the one in \
                 {TOKEN_FILE} of its data directory"
            ),
        )
        .into_response(),
        None => ApiError::new(
            axum::http::StatusCode::UNAUTHORIZED,
            "server/token-missing",
            format!(
                "send `Authorization: Bearer <token>` with the server's token: {TOKEN_ENV}, or \
                 the one in {TOKEN_FILE} of its data directory"
            ),
        )
        .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_generated_token_is_private_and_stable() {
        let dir = tempfile::tempdir().unwrap();
        let first = Token::resolve(None, dir.path()).unwrap();
        assert!(matches!(first.origin, TokenOrigin::Generated(_)));
        assert_eq!(first.secret().len(), TOKEN_BYTES * 2);
        let mode = std::fs::metadata(dir.path().join(TOKEN_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let again = Token::resolve(None, dir.path()).unwrap();
        assert!(matches!(again.origin, TokenOrigin::File(_)));
        assert!(again.matches(first.secret()));
        assert!(!again.matches("nope"));
        let env = Token::resolve(Some("s3cret".into()), dir.path()).unwrap();
        assert!(env.matches("s3cret"));
        assert_eq!(
            Token::resolve(Some(" ".into()), dir.path())
                .unwrap_err()
                .code(),
            "server/token-env-empty"
        );
    }
}
