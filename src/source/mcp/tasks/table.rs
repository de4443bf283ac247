//! The table of one server's tasks and their lifecycle: created with the work that waits for
//! a person, polled, listed, waited on for the result, cancelled, expired at the end of their
//! ttl and forgotten with their client's session. A task's work is told to stop (its plan is
//! closed as abandoned) whenever the task can no longer be answered.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{json, Map, Value};
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

use super::liveness::Liveness;
use super::{
    seconds, Owner, RpcError, IMMEDIATE_RESPONSE, IMMEDIATE_TEXT, INTERNAL_ERROR, INVALID_REQUEST,
    MAX_TASKS, RELATED_TASK,
};
use crate::clock::{iso8601, Clock as _, Millis, SystemClock};

/// A task's lifetime from its creation unless the client asks for another: a day, what a
/// person may take to decide.
const DEFAULT_TTL: Duration = Duration::from_secs(24 * 3600);
/// The shortest and longest lifetimes a client may ask for.
const MIN_TTL: Duration = Duration::from_secs(1);
const MAX_TTL: Duration = Duration::from_secs(7 * 24 * 3600);
/// How long `tasks/cancel` waits for the plan to be closed as abandoned before it answers.
const CANCEL_WAIT: Duration = Duration::from_secs(5);
/// The longest task id taken from a request (ours are 32 hex digits).
const MAX_TASK_ID: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Working,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }
}

struct Entry {
    owner: Owner,
    created: Millis,
    updated: Millis,
    ttl: Duration,
    expires: Instant,
    status: Status,
    message: Option<String>,
    /// The tool's result (a `CallToolResult`), once its work ended.
    result: Option<Value>,
    /// Stops the work (its plan is abandoned): sent on cancel, dropped with the entry.
    stop: Option<oneshot::Sender<()>>,
    /// `true` once the work ended and `result` is set.
    done: watch::Receiver<bool>,
    /// Its client fell silent and the work was told to stop (see `liveness`).
    gone_silent: bool,
}

impl Entry {
    fn expired(&self) -> bool {
        Instant::now() >= self.expires
    }
}

/// The work a task does: given the future that says stop, the tool's `CallToolResult`.
pub(crate) type Work = Box<dyn FnOnce(BoxFuture<'static, ()>) -> BoxFuture<'static, Value> + Send>;

/// Every task of one server.
pub(crate) struct Tasks {
    map: Mutex<HashMap<String, Entry>>,
    poll_every: Duration,
    /// Its clients' signs of life, where a silent client is taken to be gone (over HTTP).
    liveness: Option<Arc<Liveness>>,
    /// Work still running (its plan not yet decided or closed).
    running: watch::Sender<usize>,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks")
            .field("poll_every", &self.poll_every)
            .field("silence", &self.liveness.as_ref().map(|live| live.limit()))
            .finish_non_exhaustive()
    }
}

fn now() -> Millis {
    SystemClock.now()
}

impl Tasks {
    /// Tasks whose clients are asked to poll every `poll_every`; with a `silence` limit, a
    /// working task's plan is abandoned when its client has shown no sign of life for that long
    /// (see `liveness`).
    pub(crate) fn new(poll_every: Duration, silence: Option<Duration>) -> Arc<Self> {
        Arc::new(Self {
            map: Mutex::default(),
            poll_every,
            liveness: silence.map(Liveness::new),
            running: watch::channel(0).0,
        })
    }

    /// A request from `owner`: a sign that its client is still there.
    pub(crate) fn touch(&self, owner: &Owner) {
        if let Some(liveness) = &self.liveness {
            liveness.touch(owner);
        }
    }

    /// Forgets the signs of life of owners that hold no task any more.
    fn forget_absent(&self, map: &HashMap<String, Entry>) {
        if let Some(liveness) = &self.liveness {
            liveness.retain(|owner| map.values().any(|e| e.owner == *owner));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        // Nothing here can panic while the lock is held; a poisoned map is still whole.
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts `work` as a new task of `owner`, kept `task.ttl` milliseconds (within bounds);
    /// its `CreateTaskResult`. The work is told to stop when the task is cancelled, expires, is
    /// dropped with its client's session, or its client falls silent.
    pub(crate) fn create(
        self: &Arc<Self>,
        owner: Owner,
        task: &Value,
        work: Work,
    ) -> Result<Value, RpcError> {
        let ttl = match task {
            Value::Object(params) => match params.get("ttl") {
                None | Some(Value::Null) => DEFAULT_TTL,
                Some(ttl) => match ttl.as_f64() {
                    Some(ms) if ms.is_finite() && ms >= 0.0 => {
                        Duration::from_millis(ms.min(u64::MAX as f64) as u64)
                            .clamp(MIN_TTL, MAX_TTL)
                    }
                    _ => {
                        return Err(RpcError::invalid_params(
                            "`task.ttl` must be a number of milliseconds",
                        ))
                    }
                },
            },
            _ => {
                return Err(RpcError::invalid_params(
                    "`task` must be an object, such as {\"ttl\": 3600000}",
                ))
            }
        };
        let id = uuid::Uuid::new_v4().simple().to_string();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let (done_tx, done_rx) = watch::channel(false);
        let expires = Instant::now() + ttl;
        let created = now();
        let (snapshot, silence) = {
            let mut map = self.lock();
            map.retain(|_, entry| !entry.expired());
            let held: Vec<(&String, &Entry)> = map
                .iter()
                .filter(|(_, e)| e.owner.principal == owner.principal)
                .collect();
            if held.len() >= MAX_TASKS {
                // Room is made by forgetting the oldest finished task; working ones stay.
                let oldest = held
                    .iter()
                    .filter(|(_, e)| e.status != Status::Working)
                    .min_by_key(|(_, e)| e.updated)
                    .map(|(id, _)| (*id).clone());
                match oldest {
                    Some(oldest) => {
                        map.remove(&oldest);
                    }
                    None => {
                        return Err(RpcError {
                            code: INVALID_REQUEST,
                            message: format!(
                                "Too many tasks: at most {MAX_TASKS} plans may wait at once. \
                                 Wait for a decision or cancel a task, then submit again."
                            ),
                        })
                    }
                }
            }
            // Under the table's lock, which forgetting owners without tasks takes too: the
            // owner's signs of life are kept from here, with its task, not dropped between.
            let silence = self.liveness.as_ref().map(|live| live.silence(&owner));
            let entry = Entry {
                owner,
                created,
                updated: created,
                ttl,
                expires,
                status: Status::Working,
                message: Some(self.waiting_text()),
                result: None,
                stop: Some(stop_tx),
                done: done_rx,
                gone_silent: false,
            };
            let snapshot = self.json(&id, &entry);
            map.insert(id.clone(), entry);
            // After the insert: this owner, new or not, holds a task.
            self.forget_absent(&map);
            (snapshot, silence)
        };
        self.running.send_modify(|n| *n += 1);
        let (tasks, task) = (Arc::downgrade(self), id.clone());
        let stop: BoxFuture<'static, ()> = Box::pin(async move {
            let silence = async move {
                match silence {
                    Some(silence) => silence.await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                // Sent (cancelled) or dropped (the task was forgotten): either way, stop.
                _ = stop_rx => {}
                () = tokio::time::sleep_until(expires) => {}
                () = silence => {
                    if let Some(tasks) = tasks.upgrade() {
                        if let Some(entry) = tasks.lock().get_mut(&task) {
                            entry.gone_silent = true;
                        }
                    }
                }
            }
        });
        let tasks = self.clone();
        let running = work(stop);
        tokio::spawn(async move {
            let result = running.await;
            tasks.finish(&id, result);
            let _ = done_tx.send(true);
            tasks.running.send_modify(|n| *n = n.saturating_sub(1));
        });
        Ok(json!({"task": snapshot, "_meta": {IMMEDIATE_RESPONSE: IMMEDIATE_TEXT}}))
    }

    /// Records the work's result; a cancelled task stays cancelled.
    fn finish(&self, id: &str, result: Value) {
        let mut map = self.lock();
        let Some(entry) = map.get_mut(id) else {
            return;
        };
        if entry.status == Status::Working {
            let failed = result["isError"] == true;
            entry.status = if failed {
                Status::Failed
            } else {
                Status::Completed
            };
            entry.message = failed.then(|| match (entry.gone_silent, &self.liveness) {
                (true, Some(liveness)) => format!(
                    "Abandoned: no request from this client for {} and no tasks/result open, so \
                     it was taken to be gone; the plan was closed and nobody is asked about it",
                    seconds(liveness.limit())
                ),
                _ => error_text(&result),
            });
            entry.updated = now();
        }
        entry.stop = None;
        entry.result = Some(result);
    }

    /// The task `id` of `owner`, as `tasks/get` answers it.
    pub(crate) fn get(&self, owner: &Owner, id: &Value) -> Result<Value, RpcError> {
        let id = task_id(id)?;
        let mut map = self.lock();
        let entry = lookup(&mut map, owner, id)?;
        Ok(self.json(id, entry))
    }

    /// `owner`'s tasks, oldest first (never more than [`MAX_TASKS`], so one page).
    pub(crate) fn list(&self, owner: &Owner, params: &Value) -> Result<Value, RpcError> {
        if !params["cursor"].is_null() {
            return Err(RpcError::invalid_params(
                "Invalid cursor: the list of tasks has one page",
            ));
        }
        let mut map = self.lock();
        map.retain(|_, entry| !entry.expired());
        let mut tasks: Vec<(&String, &Entry)> =
            map.iter().filter(|(_, e)| e.owner == *owner).collect();
        tasks.sort_by(|a, b| a.1.created.cmp(&b.1.created).then(a.0.cmp(b.0)));
        let tasks: Vec<Value> = tasks
            .into_iter()
            .map(|(id, entry)| self.json(id, entry))
            .collect();
        Ok(json!({"tasks": tasks}))
    }

    /// The tool's result of task `id`, once its work ended (a person decided, or the plan
    /// was closed): waits until then.
    pub(crate) async fn result(&self, owner: &Owner, id: &Value) -> Result<Value, RpcError> {
        let id = task_id(id)?;
        // Its client waits here: there for as long as this request is open.
        let _held = self.liveness.as_ref().map(|live| live.hold(owner));
        loop {
            let mut done = {
                let mut map = self.lock();
                let entry = lookup(&mut map, owner, id)?;
                if let Some(result) = &entry.result {
                    let mut result = result.clone();
                    if let Some(object) = result.as_object_mut() {
                        let meta = object
                            .entry("_meta")
                            .or_insert_with(|| Value::Object(Map::new()));
                        if let Some(meta) = meta.as_object_mut() {
                            meta.insert(RELATED_TASK.into(), json!({"taskId": id}));
                        }
                    }
                    return Ok(result);
                }
                entry.done.clone()
            };
            if done.wait_for(|done| *done).await.is_err() {
                // The work ended without a result (it cannot, short of a panic).
                let mut map = self.lock();
                if lookup(&mut map, owner, id)?.result.is_none() {
                    return Err(RpcError {
                        code: INTERNAL_ERROR,
                        message: "the task ended without a result".into(),
                    });
                }
            }
        }
    }

    /// Cancels task `id` of `owner`: it is `cancelled` at once, and its plan is closed as
    /// abandoned before this answers (within a few seconds).
    pub(crate) async fn cancel(&self, owner: &Owner, id: &Value) -> Result<Value, RpcError> {
        let id = task_id(id)?;
        let (mut done, snapshot) = {
            let mut map = self.lock();
            let entry = lookup(&mut map, owner, id)?;
            if entry.status != Status::Working {
                return Err(RpcError::invalid_params(format!(
                    "Cannot cancel task: already in terminal status '{}'",
                    entry.status.as_str()
                )));
            }
            entry.status = Status::Cancelled;
            entry.message = Some(
                "Cancelled by the client: the plan is abandoned and nobody is asked about it"
                    .into(),
            );
            entry.updated = now();
            if let Some(stop) = entry.stop.take() {
                let _ = stop.send(());
            }
            (entry.done.clone(), self.json(id, entry))
        };
        let _ = tokio::time::timeout(CANCEL_WAIT, done.wait_for(|done| *done)).await;
        Ok(snapshot)
    }

    /// Forgets every task of `owner` (its session ended): the plans of those still working
    /// are abandoned. How many there were.
    pub(crate) fn end_session(&self, owner: &Owner) -> usize {
        self.end_where(|o| o == owner)
    }

    /// Forgets every task of `principal` (its token was revoked), as [`Tasks::end_session`].
    pub(crate) fn end_principal(&self, principal: &str) -> usize {
        self.end_where(|o| o.principal == principal)
    }

    fn end_where(&self, ends: impl Fn(&Owner) -> bool) -> usize {
        let mut map = self.lock();
        let before = map.len();
        map.retain(|_, entry| !ends(&entry.owner));
        self.forget_absent(&map);
        before - map.len()
    }

    /// Resolves once no task's work is running (every plan decided or closed).
    pub(crate) async fn idle(&self) {
        let mut running = self.running.subscribe();
        let _ = running.wait_for(|n| *n == 0).await;
    }

    /// A working task's status message: what it waits for, and what the client must do.
    fn waiting_text(&self) -> String {
        match &self.liveness {
            Some(liveness) => format!(
                "Waiting for a person to review the plan. Poll (tasks/get) at least every {} or \
                 keep tasks/result open: a client silent longer is taken to be gone, and its \
                 plan abandoned",
                seconds(liveness.limit())
            ),
            None => "Waiting for a person to review the plan".into(),
        }
    }

    /// A task as clients see it.
    fn json(&self, id: &str, entry: &Entry) -> Value {
        let mut task = json!({
            "taskId": id,
            "status": entry.status.as_str(),
            "createdAt": iso8601(entry.created),
            "lastUpdatedAt": iso8601(entry.updated),
            "ttl": entry.ttl.as_millis() as u64,
            "pollInterval": self.poll_every.as_millis() as u64,
        });
        if let Some(message) = &entry.message {
            task["statusMessage"] = json!(message);
        }
        task
    }
}

/// The task id a request names, checked.
fn task_id(id: &Value) -> Result<&str, RpcError> {
    match id.as_str() {
        Some(id) if !id.is_empty() && id.len() <= MAX_TASK_ID => Ok(id),
        Some(_) => Err(RpcError::not_found()),
        None => Err(RpcError::invalid_params("`taskId` must be a string")),
    }
}

/// The task `id` if it is `owner`'s and has not expired (an expired one is forgotten).
fn lookup<'a>(
    map: &'a mut HashMap<String, Entry>,
    owner: &Owner,
    id: &str,
) -> Result<&'a mut Entry, RpcError> {
    if map.get(id).is_some_and(Entry::expired) {
        map.remove(id);
    }
    match map.get_mut(id) {
        Some(entry) if entry.owner == *owner => Ok(entry),
        // Another client's task is not there for this one: the same answer as no task.
        _ => Err(RpcError::not_found()),
    }
}

/// What a failed result says, for the task's status message.
fn error_text(result: &Value) -> String {
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    let said = serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|object| object["content"].as_str().map(str::to_owned))
        .unwrap_or_else(|| text.to_owned());
    crate::text::short(&said, 500)
}

#[cfg(test)]
mod tests;
