//! Blocking work that is quick — a store call, a bounded read of the workspace — run in place:
//! a hop to another thread and back costs two wake-ups (on these machines ~30 µs, more than
//! the work), so it runs on the calling thread, off the async workers where it can be.

/// Runs `work` where it blocks no async worker: on a multi-threaded runtime the worker hands
/// its other tasks on first (a single-threaded one has no other thread to give them to).
pub(crate) fn in_place<T>(work: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}
