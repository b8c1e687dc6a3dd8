//! Mutex access that survives poisoning: the runtime's state stays
//! consistent at every await-free critical section, so a panic elsewhere
//! must not take every later tool call down with it.

use std::sync::{Mutex, MutexGuard, PoisonError};

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
