//! The seam between the store's behaviours, written once in `runs`, `items`, `revisions` and
//! `log`, and the two databases: a connection ([`Conn`]) that runs one SQL text, written with
//! PostgreSQL's `$1` placeholders, on either; the values it binds ([`Arg`]) and reads back
//! ([`Row`]); and the few phrases the two dialects spell differently ([`Dialect`]). What else
//! differs (connecting, locking, durability, change notifications, migrations) is each
//! backend's own: `sqlite/`, `postgres/`.

use std::future::Future;

use super::StoreError;

/// Which database a connection speaks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// The rows of a JSON array of strings bound as `$n`, as a subquery's body.
    pub(super) fn text_list(self, n: usize) -> String {
        match self {
            Dialect::Sqlite => format!("SELECT value FROM json_each(${n})"),
            Dialect::Postgres => format!("SELECT json_array_elements_text(CAST(${n} AS json))"),
        }
    }
}

/// The condition "`column` is the run `$n` names", or, with no run (`$n` bound to NULL), "every
/// row". Two texts: one condition for both (`$n IS NULL OR column = $n`) cannot use the index in
/// a plan PostgreSQL makes once for any value, and reads the whole table for one run.
pub(super) fn of_run(column: &str, n: usize, run_id: Option<&str>) -> String {
    match run_id {
        Some(_) => format!("{column} = ${n}"),
        None => format!("CAST(${n} AS TEXT) IS NULL"),
    }
}

/// A value bound to a placeholder.
#[derive(Debug, Clone, Copy)]
pub enum Arg<'a> {
    Null,
    Int(i64),
    Text(&'a str),
    Bool(bool),
    Bytes(&'a [u8]),
}

/// What can be bound to a placeholder.
pub trait ToArg: Sync {
    fn arg(&self) -> Arg<'_>;
}

impl ToArg for i64 {
    fn arg(&self) -> Arg<'_> {
        Arg::Int(*self)
    }
}

impl ToArg for bool {
    fn arg(&self) -> Arg<'_> {
        Arg::Bool(*self)
    }
}

impl ToArg for str {
    fn arg(&self) -> Arg<'_> {
        Arg::Text(self)
    }
}

impl ToArg for String {
    fn arg(&self) -> Arg<'_> {
        Arg::Text(self)
    }
}

impl ToArg for Vec<u8> {
    fn arg(&self) -> Arg<'_> {
        Arg::Bytes(self)
    }
}

impl<T: ToArg + ?Sized> ToArg for &T {
    fn arg(&self) -> Arg<'_> {
        (**self).arg()
    }
}

impl<T: ToArg> ToArg for Option<T> {
    fn arg(&self) -> Arg<'_> {
        self.as_ref().map_or(Arg::Null, ToArg::arg)
    }
}

pub type Args<'a> = &'a [&'a dyn ToArg];

/// A value read from a column, borrowed from the driver's row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cell<'a> {
    Null,
    Int(i64),
    Text(&'a str),
    Bool(bool),
    Bytes(&'a [u8]),
}

/// One row of a result as its driver holds it: each column is read straight into what it is
/// read as, while the driver steps through the result (nothing is copied in between).
pub trait Row {
    fn cell(&self, i: usize) -> Result<Cell<'_>, StoreError>;
}

/// What reads each row of a result.
pub type Each<'a> = &'a mut (dyn FnMut(&dyn Row) -> Result<(), StoreError> + Send);

pub(super) fn unreadable(i: usize, what: &str) -> StoreError {
    StoreError::Query {
        context: "read a row",
        message: format!("column {i} is not {what}"),
    }
}

/// What a cell can be read as.
pub trait FromCell: Sized {
    fn from_cell(cell: Cell<'_>, i: usize) -> Result<Self, StoreError>;
}

impl FromCell for i64 {
    fn from_cell(cell: Cell<'_>, i: usize) -> Result<Self, StoreError> {
        match cell {
            Cell::Int(n) => Ok(n),
            _ => Err(unreadable(i, "a number")),
        }
    }
}

impl FromCell for bool {
    fn from_cell(cell: Cell<'_>, i: usize) -> Result<Self, StoreError> {
        match cell {
            Cell::Bool(b) => Ok(b),
            // SQLite keeps truth as 0 and 1.
            Cell::Int(n) => Ok(n != 0),
            _ => Err(unreadable(i, "true or false")),
        }
    }
}

impl FromCell for String {
    fn from_cell(cell: Cell<'_>, i: usize) -> Result<Self, StoreError> {
        match cell {
            Cell::Text(text) => Ok(text.to_owned()),
            // SQLite keeps what it was given: text written as bytes reads as its text.
            Cell::Bytes(bytes) => std::str::from_utf8(bytes)
                .map(str::to_owned)
                .map_err(|_| unreadable(i, "text")),
            _ => Err(unreadable(i, "text")),
        }
    }
}

impl FromCell for Vec<u8> {
    fn from_cell(cell: Cell<'_>, i: usize) -> Result<Self, StoreError> {
        match cell {
            Cell::Bytes(bytes) => Ok(bytes.to_owned()),
            _ => Err(unreadable(i, "bytes")),
        }
    }
}

impl<T: FromCell> FromCell for Option<T> {
    fn from_cell(cell: Cell<'_>, i: usize) -> Result<Self, StoreError> {
        match cell {
            Cell::Null => Ok(None),
            cell => T::from_cell(cell, i).map(Some),
        }
    }
}

impl dyn Row + '_ {
    /// Column `i`.
    pub(super) fn get<T: FromCell>(&self, i: usize) -> Result<T, StoreError> {
        T::from_cell(self.cell(i)?, i)
    }

    /// Column `i`, a stored vocabulary word, refused if this build does not know it.
    pub(super) fn word<T>(&self, parse: fn(&str) -> Option<T>, i: usize) -> Result<T, StoreError> {
        match self.cell(i)? {
            Cell::Text(text) => parse(text).ok_or_else(|| StoreError::Query {
                context: "read a row",
                message: format!("unknown value `{text}` in column {i}"),
            }),
            _ => Err(unreadable(i, "a word")),
        }
    }

    /// Column `i`, JSON kept as text (a value altered into invalid JSON reads as its text).
    pub(super) fn json(&self, i: usize) -> Result<serde_json::Value, StoreError> {
        let text: String = self.get(i)?;
        Ok(serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text)))
    }
}

/// A connection to one of the databases: in a write transaction, or reading.
pub trait Conn: Send {
    fn dialect(&self) -> Dialect;
    /// Runs a query (through the connection's statement cache), handing each row to `each`
    /// (stopping at its first error).
    fn query(
        &mut self,
        context: &'static str,
        sql: &str,
        args: Args<'_>,
        each: Each<'_>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Runs a statement; how many rows it changed.
    fn execute(
        &mut self,
        context: &'static str,
        sql: &str,
        args: Args<'_>,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;
    /// Runs a statement of a write whose count nobody reads. A backend whose every statement
    /// is a round trip (PostgreSQL) may hold it back and send it with the next one: it runs
    /// before that one, in order, and if it fails, that one fails with its error (the commit
    /// included). Here, at once.
    fn later(
        &mut self,
        context: &'static str,
        sql: &str,
        args: Args<'_>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        async move { self.execute(context, sql, args).await.map(drop) }
    }
}

/// A connection as the behaviours use it: in a write transaction (which notes what it
/// appended to the audit trail), or reading.
pub(super) struct Tx<C> {
    pub(super) conn: C,
    /// The audit entries this transaction appended (ids and hashes, in order), after the
    /// trail's last entry when it first appended, if there was one: read under the write lock,
    /// they are the whole trail from there on. Empty if it appended none.
    pub(super) trail: Vec<(i64, String)>,
}

impl<C: Conn> Tx<C> {
    pub(super) fn new(conn: C) -> Self {
        Self {
            conn,
            trail: Vec::new(),
        }
    }

    pub(super) fn dialect(&self) -> Dialect {
        self.conn.dialect()
    }

    /// A query's first row, if any, read by `read`.
    pub(super) async fn row<T: Send>(
        &mut self,
        context: &'static str,
        sql: &str,
        args: Args<'_>,
        mut read: impl FnMut(&dyn Row) -> Result<T, StoreError> + Send,
    ) -> Result<Option<T>, StoreError> {
        let mut first = None;
        let mut each = |row: &dyn Row| {
            if first.is_none() {
                first = Some(read(row)?);
            }
            Ok(())
        };
        self.conn.query(context, sql, args, &mut each).await?;
        Ok(first)
    }

    /// A query's first row, which it must have (`missing` says what is wrong when it has
    /// none), read by `read`.
    pub(super) async fn one<T: Send>(
        &mut self,
        context: &'static str,
        sql: &str,
        args: Args<'_>,
        missing: impl FnOnce() -> StoreError,
        read: impl FnMut(&dyn Row) -> Result<T, StoreError> + Send,
    ) -> Result<T, StoreError> {
        self.row(context, sql, args, read)
            .await?
            .ok_or_else(missing)
    }

    pub(super) async fn execute(
        &mut self,
        context: &'static str,
        sql: &str,
        args: Args<'_>,
    ) -> Result<u64, StoreError> {
        self.conn.execute(context, sql, args).await
    }

    /// A statement whose count nobody reads (see [`Conn::later`]): its error may come from
    /// the next statement.
    pub(super) async fn later(
        &mut self,
        context: &'static str,
        sql: &str,
        args: Args<'_>,
    ) -> Result<(), StoreError> {
        self.conn.later(context, sql, args).await
    }

    /// Each row of a query, read by `read`.
    pub(super) async fn all<T: Send>(
        &mut self,
        context: &'static str,
        sql: &str,
        args: Args<'_>,
        mut read: impl FnMut(&dyn Row) -> Result<T, StoreError> + Send,
    ) -> Result<Vec<T>, StoreError> {
        let mut found = Vec::new();
        let mut each = |row: &dyn Row| {
            found.push(read(row)?);
            Ok(())
        };
        self.conn.query(context, sql, args, &mut each).await?;
        Ok(found)
    }
}
