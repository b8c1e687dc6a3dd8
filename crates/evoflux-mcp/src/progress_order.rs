//! Progress and log messages a server sends during a call reach the call's
//! listener in the order they were read, and before the call returns.
//!
//! Why this is needed: rmcp reads a connection's messages in order, but
//! hands each notification to a task of its own while it hands a response
//! straight to the waiting call. Two back-to-back notifications can then
//! reach the listener in either order, and a server that sends its last
//! `notifications/progress` or `notifications/message` and then the result
//! at once can have the result read, the call return and its registration
//! ([`crate::live::Registration`]) dropped before the notification's task
//! runs: the notification then finds no call and is lost.
//!
//! The fix sits where the order is still known. [`Sequenced`] wraps the
//! transport: each notification that reaches a call (progress and log
//! messages, [`reaches_a_call`]) gets a number ([`ReadSeq`], in the
//! notification's extensions) and is recorded as pending in the
//! connection's [`ReadOrder`]. Its handler takes its [`Turn`] before it
//! passes the notification on: the turn comes once every notification read
//! before it was delivered, and delivers this one when it ends. A call
//! that got its answer waits ([`ReadOrder::delivered_so_far`]) until every
//! notification read before that answer was delivered. Both waits are
//! bounded by [`DISPATCH_LIMIT`], so a lost task can delay, never hang.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{Extensions, JsonRpcMessage, JsonRpcNotification, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::Notify;

/// The longest a notification waits for the ones read before it, and a
/// call for those read before its answer, to be delivered. Dispatch is a
/// task switch away, so this is only reached when a dispatch task was
/// lost; the numbers waited for are then forgotten.
pub(crate) const DISPATCH_LIMIT: Duration = Duration::from_secs(1);

/// The read order of one notification on its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ReadSeq(u64);

/// The notifications of one connection read but not yet delivered.
#[derive(Debug, Default)]
pub(crate) struct ReadOrder {
    /// The number the next notification read gets.
    next: AtomicU64,
    pending: Mutex<BTreeSet<u64>>,
    delivered: Notify,
}

/// A notification's turn to be delivered; it is delivered when this drops,
/// whether it was passed on or found no call.
#[must_use = "the notification counts as delivered when its turn drops"]
pub(crate) struct Turn<'a> {
    order: &'a ReadOrder,
    seq: Option<ReadSeq>,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if let Some(seq) = self.seq {
            self.order.pending().remove(&seq.0);
            self.order.delivered.notify_waiters();
        }
    }
}

impl ReadOrder {
    fn pending(&self) -> std::sync::MutexGuard<'_, BTreeSet<u64>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A notification that reaches a call was read from the transport.
    pub(crate) fn read(&self) -> ReadSeq {
        let mut pending = self.pending();
        // Numbered under the lock, so a waiter never sees a number handed
        // out but not yet pending.
        let seq = self.next.fetch_add(1, Ordering::SeqCst);
        pending.insert(seq);
        ReadSeq(seq)
    }

    /// Waits until every notification read before `seq` was delivered;
    /// `seq` is delivered when the returned turn drops. A notification
    /// without a number (none is expected) takes its turn at once.
    pub(crate) async fn turn(&self, seq: Option<ReadSeq>) -> Turn<'_> {
        if let Some(ReadSeq(upto)) = seq {
            self.delivered_before(upto).await;
        }
        Turn { order: self, seq }
    }

    /// Waits until every notification read so far was delivered.
    pub(crate) async fn delivered_so_far(&self) {
        let upto = {
            let _pending = self.pending();
            self.next.load(Ordering::SeqCst)
        };
        self.delivered_before(upto).await;
    }

    /// Waits until no number below `upto` is pending, at most
    /// [`DISPATCH_LIMIT`]; then forgets those still pending.
    async fn delivered_before(&self, upto: u64) {
        let done = || self.pending().first().is_none_or(|first| *first >= upto);
        let wait = async {
            loop {
                let woken = self.delivered.notified();
                tokio::pin!(woken);
                woken.as_mut().enable();
                if done() {
                    return;
                }
                woken.await;
            }
        };
        if tokio::time::timeout(DISPATCH_LIMIT, wait).await.is_err() {
            tracing::debug!("a notification read earlier was not delivered in time");
            self.pending().retain(|seq| *seq >= upto);
            self.delivered.notify_waiters();
        }
    }
}

/// The extensions of a notification that reaches a call (progress and log
/// messages), which are delivered in read order; `None` for the others.
fn reaches_a_call(notification: &mut ServerNotification) -> Option<&mut Extensions> {
    match notification {
        ServerNotification::ProgressNotification(n) => Some(&mut n.extensions),
        ServerNotification::LoggingMessageNotification(n) => Some(&mut n.extensions),
        // rmcp's notifications are non-exhaustive: list changes,
        // cancellations, resource updates, tasks and the rest never
        // reach a call's listener.
        _ => None,
    }
}

/// A client transport that numbers the notifications it reads that reach
/// a call into a connection's [`ReadOrder`]; everything else passes as is.
pub(crate) struct Sequenced<T> {
    inner: T,
    order: std::sync::Arc<ReadOrder>,
}

impl<T> Sequenced<T> {
    pub(crate) fn new(inner: T, order: std::sync::Arc<ReadOrder>) -> Self {
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
        if let JsonRpcMessage::Notification(JsonRpcNotification { notification, .. }) = &mut message
            && let Some(extensions) = reaches_a_call(notification)
        {
            extensions.insert(self.order.read());
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
    async fn a_call_waits_for_notifications_read_before_its_answer_only() {
        let order = Arc::new(ReadOrder::default());
        let early = order.read();
        let waiter = {
            let order = Arc::clone(&order);
            tokio::spawn(async move { order.delivered_so_far().await })
        };
        tokio::task::yield_now().await;
        // Read after the answer: not waited for.
        let _late = order.read();
        assert!(!waiter.is_finished());
        drop(order.turn(Some(early)).await);
        tokio::time::timeout(Duration::from_millis(500), waiter)
            .await
            .expect("the call stops waiting once earlier notifications are delivered")
            .unwrap();
    }

    #[tokio::test]
    async fn a_notification_waits_for_its_turn() {
        let order = Arc::new(ReadOrder::default());
        let first = order.read();
        let second = order.read();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        // The second's task runs first, as rmcp's tasks may.
        let later = {
            let order = Arc::clone(&order);
            let tx = tx.clone();
            tokio::spawn(async move {
                let _turn = order.turn(Some(second)).await;
                tx.send(2).unwrap();
            })
        };
        tokio::task::yield_now().await;
        assert!(!later.is_finished());
        {
            let _turn = order.turn(Some(first)).await;
            tx.send(1).unwrap();
        }
        tokio::time::timeout(Duration::from_millis(500), later)
            .await
            .expect("the second is delivered once the first is")
            .unwrap();
        assert_eq!((rx.recv().await, rx.recv().await), (Some(1), Some(2)));
    }

    #[tokio::test]
    async fn a_lost_dispatch_delays_once_and_is_then_forgotten() {
        let order = ReadOrder::default();
        let _lost = order.read();
        let next = order.read();
        // The next notification waits for the lost one, then goes on.
        drop(order.turn(Some(next)).await);
        order.delivered_so_far().await;
        // Forgotten: the next call does not wait for it again.
        assert!(order.pending().is_empty());
    }
}
