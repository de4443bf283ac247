//! Statements held back to go with the next one (`Conn::later`): a write's statements whose
//! counts nobody reads travel together, one round trip instead of one each, while the write
//! lock is held.

use std::future::Future;
use std::pin::Pin;

use super::{params, query, Bind};
use crate::store::sql::{Arg, Args};
use crate::store::StoreError;

/// A statement held back, with its own copy of its values.
#[derive(Debug)]
pub(super) struct Later {
    context: &'static str,
    sql: String,
    args: Vec<Owned>,
}

impl Later {
    pub(super) fn new(context: &'static str, sql: &str, args: Args<'_>) -> Self {
        Self {
            context,
            sql: sql.to_owned(),
            args: args.iter().map(|a| Owned::of(a.arg())).collect(),
        }
    }
}

/// A value bound to a placeholder, owned.
#[derive(Debug)]
enum Owned {
    Null,
    Int(i64),
    Text(String),
    Bool(bool),
    Bytes(Vec<u8>),
}

impl Owned {
    fn of(arg: Arg<'_>) -> Self {
        match arg {
            Arg::Null => Owned::Null,
            Arg::Int(n) => Owned::Int(n),
            Arg::Text(text) => Owned::Text(text.to_owned()),
            Arg::Bool(b) => Owned::Bool(b),
            Arg::Bytes(bytes) => Owned::Bytes(bytes.to_owned()),
        }
    }

    fn arg(&self) -> Arg<'_> {
        match self {
            Owned::Null => Arg::Null,
            Owned::Int(n) => Arg::Int(*n),
            Owned::Text(text) => Arg::Text(text),
            Owned::Bool(b) => Arg::Bool(*b),
            Owned::Bytes(bytes) => Arg::Bytes(bytes),
        }
    }
}

/// Sends the statements held back (`later`), then `now`, without waiting for an answer in
/// between (the driver pipelines requests in the order their futures are first polled): the
/// first error, theirs before its. After a statement the server failed it refuses the rest of
/// the transaction, and a COMMIT rolls it back; one the driver refused before sending (a value
/// it cannot bind) stops the rest from being sent at all, so that `now`, a COMMIT, never
/// commits the transaction without it.
pub(super) async fn after<T>(
    client: &deadpool_postgres::Client,
    later: &[Later],
    context: &'static str,
    now: impl Future<Output = Result<T, tokio_postgres::Error>> + Send,
) -> Result<T, StoreError> {
    use futures::future::{maybe_done, MaybeDone};
    if later.is_empty() {
        return now.await.map_err(query(context));
    }
    let mut statements = Vec::with_capacity(later.len());
    for held in later {
        let statement = client.prepare_cached(&held.sql).await;
        statements.push(statement.map_err(query(held.context))?);
    }
    let binds: Vec<Vec<Bind<'_>>> = later
        .iter()
        .map(|held| held.args.iter().map(|a| Bind(a.arg())).collect())
        .collect();
    let params: Vec<_> = binds.iter().map(|b| params(b)).collect();
    let mut sent: Vec<_> = statements
        .iter()
        .zip(&params)
        .map(|(statement, params)| maybe_done(Box::pin(client.execute(statement, params))))
        .collect();
    let mut now = maybe_done(Box::pin(now));
    // Each request goes out on its future's first poll: all of them, in order, then the wait.
    for (index, held) in sent.iter_mut().enumerate() {
        let _ = futures::poll!(&mut *held);
        if let MaybeDone::Done(Err(_)) = held {
            if let Some(Err(err)) = Pin::new(held).take_output() {
                return Err(query(later[index].context)(err));
            }
        }
    }
    let _ = futures::poll!(&mut now);
    for held in &mut sent {
        (&mut *held).await;
    }
    (&mut now).await;
    for (held, done) in later.iter().zip(&mut sent) {
        if let Some(Err(err)) = Pin::new(done).take_output() {
            return Err(query(held.context)(err));
        }
    }
    match Pin::new(&mut now).take_output() {
        Some(done) => done.map_err(query(context)),
        None => Err(StoreError::Query {
            context,
            message: "no answer".into(),
        }),
    }
}
