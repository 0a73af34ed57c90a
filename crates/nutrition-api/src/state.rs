//! What the handlers share.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::{Notify, Semaphore};

use domain::recipes::Catalogue;

use crate::settings::Settings;

#[derive(Clone)]
pub struct AppState {
    pub settings: Arc<Settings>,
    /// The recipes shipped with the product, loaded and checked at start-up.
    pub catalogue: Arc<Catalogue>,
    /// `None` when push is switched off (no VAPID keys).
    pub push: Option<push::Sender>,
    pub test_pushes: Arc<TestPushes>,
}

/// The test push's share of this process: how many of its sends may be in flight at once, and
/// whether the process is stopping (then no new send starts).
#[derive(Debug)]
pub struct TestPushes {
    pub sends: Semaphore,
    stopping: AtomicBool,
    notify: Notify,
}

impl TestPushes {
    pub fn new(sends: usize) -> Self {
        Self {
            sends: Semaphore::new(sends),
            stopping: AtomicBool::new(false),
            notify: Notify::new(),
        }
    }

    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    pub fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// Returns once [`Self::stop`] was called.
    pub async fn stopped(&self) {
        loop {
            let notified = self.notify.notified();
            if self.is_stopping() {
                return;
            }
            notified.await;
        }
    }
}
