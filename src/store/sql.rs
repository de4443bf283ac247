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

/// A value bound to a placeholder.
#[derive(Debug, Clone, Copy)]
pub enum Arg<'a> {
    Null,
    Int(i64),
    Text(&'a str),
    Bool(bool),
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

/// A value read from a column.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    Int(i64),
    Text(String),
    Bool(bool),
}

/// One row of a result, its cells in column order.
#[derive(Debug)]
pub struct Row(pub(super) Vec<Cell>);

fn unreadable(i: usize, what: &str) -> StoreError {
    StoreError::Query {
        context: "read a row",
        message: format!("column {i} is not {what}"),
    }
}

/// What a cell can be read as.
pub trait FromCell: Sized {
    fn from_cell(cell: Cell, i: usize) -> Result<Self, StoreError>;
}

impl FromCell for i64 {
    fn from_cell(cell: Cell, i: usize) -> Result<Self, StoreError> {
        match cell {
            Cell::Int(n) => Ok(n),
            _ => Err(unreadable(i, "a number")),
        }
    }
}

impl FromCell for u32 {
    fn from_cell(cell: Cell, i: usize) -> Result<Self, StoreError> {
        u32::try_from(i64::from_cell(cell, i)?).map_err(|_| unreadable(i, "a small number"))
    }
}

impl FromCell for bool {
    fn from_cell(cell: Cell, i: usize) -> Result<Self, StoreError> {
        match cell {
            Cell::Bool(b) => Ok(b),
            // SQLite keeps truth as 0 and 1.
            Cell::Int(n) => Ok(n != 0),
            _ => Err(unreadable(i, "true or false")),
        }
    }
}

impl FromCell for String {
    fn from_cell(cell: Cell, i: usize) -> Result<Self, StoreError> {
        match cell {
            Cell::Text(text) => Ok(text),
            _ => Err(unreadable(i, "text")),
        }
    }
}

impl<T: FromCell> FromCell for Option<T> {
    fn from_cell(cell: Cell, i: usize) -> Result<Self, StoreError> {
        match cell {
            Cell::Null => Ok(None),
            cell => T::from_cell(cell, i).map(Some),
        }
    }
}

impl Row {
    /// Column `i`, taken out of the row (read each column once).
    pub(super) fn get<T: FromCell>(&mut self, i: usize) -> Result<T, StoreError> {
        let cell = self.0.get_mut(i).ok_or_else(|| unreadable(i, "there"))?;
        T::from_cell(std::mem::replace(cell, Cell::Null), i)
    }

    /// Column `i`, a stored vocabulary word, refused if this build does not know it.
    pub(super) fn word<T>(
        &mut self,
        parse: fn(&str) -> Option<T>,
        i: usize,
    ) -> Result<T, StoreError> {
        let text: String = self.get(i)?;
        parse(&text).ok_or_else(|| StoreError::Query {
            context: "read a row",
            message: format!("unknown value `{text}` in column {i}"),
        })
    }

    /// Column `i`, JSON kept as text (a value altered into invalid JSON reads as its text).
    pub(super) fn json(&mut self, i: usize) -> Result<serde_json::Value, StoreError> {
        let text: String = self.get(i)?;
        Ok(serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text)))
    }
}

/// A connection to one of the databases: in a write transaction, or reading.
pub trait Conn: Send {
    fn dialect(&self) -> Dialect;
    /// Runs a query (through the connection's statement cache), reading every row.
    fn query(
        &mut self,
        context: &'static str,
        sql: &str,
        args: Args<'_>,
    ) -> impl Future<Output = Result<Vec<Row>, StoreError>> + Send;
    /// Runs a statement; how many rows it changed.
    fn execute(
        &mut self,
        context: &'static str,
        sql: &str,
        args: Args<'_>,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;
}

/// A connection as the behaviours use it: in a write transaction (which notes whether it
/// appended to the audit trail), or reading.
pub(super) struct Tx<C> {
    pub(super) conn: C,
    /// An entry was appended to the audit trail in this transaction.
    pub(super) appended: bool,
}

impl<C: Conn> Tx<C> {
    pub(super) fn new(conn: C) -> Self {
        Self {
            conn,
            appended: false,
        }
    }

    pub(super) fn dialect(&self) -> Dialect {
        self.conn.dialect()
    }

    /// A query's first row, if any.
    pub(super) async fn row(
        &mut self,
        context: &'static str,
        sql: &str,
        args: Args<'_>,
    ) -> Result<Option<Row>, StoreError> {
        Ok(self
            .conn
            .query(context, sql, args)
            .await?
            .into_iter()
            .next())
    }

    /// A query's first row, which it must have (`missing` says what is wrong when it has none).
    pub(super) async fn one(
        &mut self,
        context: &'static str,
        sql: &str,
        args: Args<'_>,
        missing: impl FnOnce() -> StoreError,
    ) -> Result<Row, StoreError> {
        self.row(context, sql, args).await?.ok_or_else(missing)
    }

    pub(super) async fn execute(
        &mut self,
        context: &'static str,
        sql: &str,
        args: Args<'_>,
    ) -> Result<u64, StoreError> {
        self.conn.execute(context, sql, args).await
    }

    /// Each row of a query, read by `read`.
    pub(super) async fn all<T>(
        &mut self,
        context: &'static str,
        sql: &str,
        args: Args<'_>,
        read: impl FnMut(Row) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        self.conn
            .query(context, sql, args)
            .await?
            .into_iter()
            .map(read)
            .collect()
    }
}
