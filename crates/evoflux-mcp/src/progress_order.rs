//! Progress a server sent before a call's answer reaches that call before
//! the call returns.
//!
//! Why this is needed: rmcp reads a connection's messages in order, but
//! hands each notification to a task of its own while it hands a response
//! straight to the waiting call. A server that sends its last
//! `notifications/progress` and then the result at once can have the
//! result read, the call return and its registration
//! ([`crate::live::Registration`]) dropped before the progress task runs:
//! the progress then finds no call and is lost.
//!
//! The fix sits where the order is still known. [`Sequenced`] wraps the
//! transport: each progress notification it reads gets a number
//! ([`ProgressSeq`], in the notification's extensions) and is recorded as
//! pending in the connection's [`ProgressOrder`]; the handler marks it
//! dispatched once the call's listener has it. A call that got its answer
//! waits ([`ProgressOrder::dispatched_so_far`]) until every progress read
//! before that answer was dispatched — bounded by [`DISPATCH_LIMIT`], so a
//! lost task can delay a call, never hang it.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{JsonRpcMessage, JsonRpcNotification, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::Notify;

/// The longest a call waits for progress read before its answer to be
/// dispatched. Dispatch is a task switch away, so this is only reached
/// when a dispatch task was lost; the pending numbers are then forgotten.
pub(crate) const DISPATCH_LIMIT: Duration = Duration::from_secs(1);

/// The read order of one progress notification on its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ProgressSeq(u64);

/// The progress notifications of one connection read but not yet
/// dispatched to their call.
#[derive(Debug, Default)]
pub(crate) struct ProgressOrder {
    /// The number the next progress read gets.
    next: AtomicU64,
    pending: Mutex<BTreeSet<u64>>,
    dispatched: Notify,
}

impl ProgressOrder {
    fn pending(&self) -> std::sync::MutexGuard<'_, BTreeSet<u64>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A progress notification was read from the transport.
    pub(crate) fn read(&self) -> ProgressSeq {
        let mut pending = self.pending();
        // Numbered under the lock, so `dispatched_so_far` never sees a
        // number handed out but not yet pending.
        let seq = self.next.fetch_add(1, Ordering::SeqCst);
        pending.insert(seq);
        ProgressSeq(seq)
    }

    /// That notification reached its call (or was found to have none).
    pub(crate) fn dispatched(&self, seq: ProgressSeq) {
        self.pending().remove(&seq.0);
        self.dispatched.notify_waiters();
    }

    /// Waits until every progress notification read so far was
    /// dispatched, at most [`DISPATCH_LIMIT`].
    pub(crate) async fn dispatched_so_far(&self) {
        let upto = {
            let _pending = self.pending();
            self.next.load(Ordering::SeqCst)
        };
        let done = || self.pending().first().is_none_or(|first| *first >= upto);
        let wait = async {
            loop {
                let woken = self.dispatched.notified();
                tokio::pin!(woken);
                woken.as_mut().enable();
                if done() {
                    return;
                }
                woken.await;
            }
        };
        if tokio::time::timeout(DISPATCH_LIMIT, wait).await.is_err() {
            tracing::debug!("progress read before a call's answer was not dispatched in time");
            self.pending().retain(|seq| *seq >= upto);
        }
    }
}

/// A client transport that numbers the progress notifications it reads
/// into a connection's [`ProgressOrder`]; everything else passes as is.
pub(crate) struct Sequenced<T> {
    inner: T,
    order: std::sync::Arc<ProgressOrder>,
}

impl<T> Sequenced<T> {
    pub(crate) fn new(inner: T, order: std::sync::Arc<ProgressOrder>) -> Self {
        Sequenced { inner, order }
    }
}

impl<T> Transport<RoleClient> for Sequenced<T>
where
    T: Transport<RoleClient>,
{
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let mut message = self.inner.receive().await?;
        if let JsonRpcMessage::Notification(JsonRpcNotification {
            notification: ServerNotification::ProgressNotification(progress),
            ..
        }) = &mut message
        {
            progress.extensions.insert(self.order.read());
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[tokio::test]
    async fn a_call_waits_for_progress_read_before_its_answer_only() {
        let order = Arc::new(ProgressOrder::default());
        let early = order.read();
        let waiter = {
            let order = Arc::clone(&order);
            tokio::spawn(async move { order.dispatched_so_far().await })
        };
        tokio::task::yield_now().await;
        // Read after the answer: not waited for.
        let _late = order.read();
        assert!(!waiter.is_finished());
        order.dispatched(early);
        tokio::time::timeout(Duration::from_millis(500), waiter)
            .await
            .expect("the call stops waiting once earlier progress is dispatched")
            .unwrap();
    }

    #[tokio::test]
    async fn a_lost_dispatch_delays_a_call_once_and_is_then_forgotten() {
        let order = ProgressOrder::default();
        let _lost = order.read();
        order.dispatched_so_far().await;
        // Forgotten: the next call does not wait for it again.
        assert!(order.pending().is_empty());
    }
}
