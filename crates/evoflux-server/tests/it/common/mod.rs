//! The real server on a loopback port, for the integration tests: an app
//! context in a temp folder ([`setup`], the application's test
//! application, which the unit tests start from too), and a server
//! started on it and stopped.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use evoflux_app::AppContext;
use evoflux_server::{ServeOptions, Token, serve};

pub use evoflux_app::testing::setup;

/// The bearer token [`start`] serves with.
pub const TOKEN: &str = "test-token";

/// A server [`start`]ed on a loopback port.
pub struct Running {
    pub addr: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    /// `http://` and the server's address.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops the server and expects it stopped, without an error, within
    /// 30 seconds.
    pub async fn stop(self) {
        let Running { stop, mut task, .. } = self;
        let _ = stop.send(());
        tokio::time::timeout(Duration::from_secs(30), &mut task)
            .await
            .expect("the server stops")
            .unwrap();
    }

    /// Stops the server and waits for it, whatever it ended with.
    pub async fn stop_and_wait(self) {
        let Running { stop, task, .. } = self;
        let _ = stop.send(());
        let _ = task.await;
    }
}

/// The options serving `app`'s working directory on `addr` with `token`.
pub fn options(app: &AppContext, addr: SocketAddr, token: &str) -> ServeOptions {
    let token = Token::resolve(Some(token.into()), app.dirs.data_dir()).unwrap();
    ServeOptions::new(
        addr,
        vec![app.cwd.canonicalize().unwrap()],
        token,
        Default::default(),
    )
}

/// Serves `app` on a loopback port with [`TOKEN`] and `tune` applied to
/// the options.
pub async fn start(app: &AppContext, tune: impl FnOnce(&mut ServeOptions)) -> Running {
    let mut options = options(app, SocketAddr::from(([127, 0, 0, 1], 0)), TOKEN);
    tune(&mut options);
    let (addr_tx, addr_rx) = tokio::sync::oneshot::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let app = app.clone();
    let task = tokio::spawn(async move {
        serve(
            app,
            options,
            move |addr| {
                let _ = addr_tx.send(addr);
            },
            async move {
                let _ = stop_rx.await;
            },
        )
        .await
        .unwrap();
    });
    let addr = addr_rx.await.unwrap();
    Running {
        addr,
        stop: stop_tx,
        task,
    }
}
