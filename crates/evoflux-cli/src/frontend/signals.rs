//! Signals for the command line's front ends: Ctrl-C, SIGTERM and SIGHUP,
//! which every long-running command turns into a cancellation through the
//! session host (or its own stop path) rather than a killed process that
//! leaves commands and MCP servers behind.

/// Resolves on Ctrl-C, SIGTERM or SIGHUP.
pub(crate) async fn shutdown_signal() {
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate_signal() => {}
    }
}

/// Resolves on SIGTERM or SIGHUP: a closed terminal stops evoflux as
/// SIGTERM does, its commands and servers stopped, not left behind. Never
/// resolves where there are no such signals.
pub(crate) async fn terminate_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) {
            (Ok(mut term), Ok(mut hup)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = hup.recv() => {}
                }
            }
            (Ok(mut term), Err(_)) => {
                let _ = term.recv().await;
            }
            (Err(_), _) => std::future::pending::<()>().await,
        }
    }
    #[cfg(not(unix))]
    std::future::pending::<()>().await;
}
