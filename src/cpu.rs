//! [`CpuWork`]: CPU-heavy work of requests (expanding recurrence rules, reading and writing
//! iCalendar files) runs on the runtime's blocking threads, never on its async workers, and
//! only as many pieces at once as the machine has cores, so that such requests queue among
//! themselves while every other request goes on being answered.

use std::time::Duration;

use tokio::sync::Semaphore;

use crate::error::AppError;

/// One server's limit on CPU-heavy request work.
#[derive(Debug)]
pub struct CpuWork {
    permits: Semaphore,
    queue_timeout: Duration,
}

impl CpuWork {
    /// At most `concurrency` pieces at once; a piece that waits longer than `queue_timeout`
    /// for its turn is refused (503).
    pub fn new(concurrency: usize, queue_timeout: Duration) -> Self {
        Self {
            permits: Semaphore::new(concurrency.max(1)),
            queue_timeout,
        }
    }

    /// One piece per core of this machine.
    pub fn per_core(queue_timeout: Duration) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        Self::new(cores, queue_timeout)
    }

    /// Runs `work` on a blocking thread once a piece may start; `what` names it in errors.
    pub async fn run<T: Send + 'static>(
        &self,
        what: &'static str,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, AppError> {
        let _permit = tokio::time::timeout(self.queue_timeout, self.permits.acquire())
            .await
            .map_err(|_| AppError::Unavailable(format!("{what}: the server is busy").into()))?
            .map_err(|_| AppError::Unavailable(format!("{what}: shutting down").into()))?;
        tokio::task::spawn_blocking(work)
            .await
            .map_err(|err| AppError::internal(format!("{what} failed: {err}")))
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn pieces_wait_their_turn_and_give_up_after_the_queue_timeout() {
        let work = std::sync::Arc::new(CpuWork::new(1, Duration::from_millis(50)));
        let (started, wait) = std::sync::mpsc::channel::<()>();
        let (release, hold) = std::sync::mpsc::channel::<()>();
        let busy = {
            let work = work.clone();
            tokio::spawn(async move {
                work.run("hold", move || {
                    started.send(()).unwrap();
                    hold.recv().unwrap();
                })
                .await
            })
        };
        tokio::task::spawn_blocking(move || wait.recv().unwrap())
            .await
            .unwrap();
        let refused = work.run("second", || 2).await.expect_err("queue timeout");
        assert_eq!(refused.status(), http::StatusCode::SERVICE_UNAVAILABLE);
        release.send(()).unwrap();
        busy.await.unwrap().unwrap();
        assert_eq!(work.run("third", || 3).await.unwrap(), 3);
    }
}
