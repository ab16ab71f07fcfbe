//! One way to run SQL on either backend (issue 27): a module written against
//! [`Sql`] runs on SQLite (`rusqlite`) and on PostgreSQL (`postgres`) alike. A
//! statement is sent as written, never rewritten (issue 42): parameters are `$1`,
//! `$2`, …, which both take (SQLite as named parameters, bound here by their
//! number, `bind_numbered`); where the two dialects differ (SQLite's planner
//! hints), both texts are written out as [`Dialects`] and each backend runs its
//! own. Parameters are [`Param`]s and rows come back as owned [`Row`]s read by
//! column name. See `POSTGRES.md` beside this file for what differs and how.

use std::cell::RefCell;
use std::sync::Arc;

/// A statement's parameter: the four kinds the schema stores. Integers are 64-bit
/// everywhere (`INTEGER` in SQLite, `BIGINT` in PostgreSQL); booleans are integers
/// 0 and 1, as SQLite keeps them.
#[derive(Clone, Copy, Debug)]
pub enum Param<'a> {
    Null,
    Int(i64),
    Text(&'a str),
    Bytes(&'a [u8]),
}

impl<'a> From<&'a str> for Param<'a> {
    fn from(value: &'a str) -> Self {
        Param::Text(value)
    }
}

impl<'a> From<&'a String> for Param<'a> {
    fn from(value: &'a String) -> Self {
        Param::Text(value)
    }
}

impl<'a> From<&'a [u8]> for Param<'a> {
    fn from(value: &'a [u8]) -> Self {
        Param::Bytes(value)
    }
}

impl From<i64> for Param<'_> {
    fn from(value: i64) -> Self {
        Param::Int(value)
    }
}

impl From<bool> for Param<'_> {
    fn from(value: bool) -> Self {
        Param::Int(i64::from(value))
    }
}

impl<'a, T: Into<Param<'a>>> From<Option<T>> for Param<'a> {
    fn from(value: Option<T>) -> Self {
        value.map_or(Param::Null, Into::into)
    }
}

/// One column's value as read.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Bytes(Vec<u8>),
}

impl Value {
    fn kind(&self) -> &'static str {
        match self {
            Value::Null => "NULL",
            Value::Int(_) => "an integer",
            Value::Real(_) => "a real",
            Value::Text(_) => "text",
            Value::Bytes(_) => "bytes",
        }
    }
}

/// Why a row could not be read as asked: the same on both backends, naming the
/// column by its name.
#[derive(Debug, thiserror::Error)]
pub enum Decode {
    #[error("the query returned no row")]
    NoRow,
    #[error("the row has no column `{column}` (it has {})", listed(.columns))]
    Missing {
        column: String,
        columns: Vec<String>,
    },
    #[error("column `{column}` is {found}, not {expected}")]
    Type {
        column: String,
        expected: &'static str,
        found: &'static str,
    },
    #[error("column `{column}` holds `{value}`: {message}")]
    Parse {
        column: String,
        value: String,
        message: String,
    },
    #[error("column `{column}` has PostgreSQL type `{type_name}`, which no module reads")]
    Unsupported { column: String, type_name: String },
}

fn listed(columns: &[String]) -> String {
    if columns.is_empty() {
        return "none".into();
    }
    let names: Vec<String> = columns.iter().map(|c| format!("`{c}`")).collect();
    names.join(", ")
}

/// A row read back: its values in the query's order, and the names of its
/// columns, shared by every row of one query (built once per statement). Rows are
/// read by column name, so a query's `SELECT` list and the struct it fills meet in
/// one place ([`FromRow`]) and a column added, moved or renamed cannot shift what
/// another column reads. Names are the database's: a table's column name, or the
/// alias every computed column is given (`COUNT(*) AS n`), lowercase snake_case,
/// which PostgreSQL (lowercasing unquoted aliases) and SQLite report alike.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    columns: Arc<[String]>,
    values: Vec<Value>,
}

impl Row {
    /// A row of `values`, named by `columns` (the same length, in the same order).
    pub fn new(columns: Arc<[String]>, values: Vec<Value>) -> Row {
        debug_assert_eq!(columns.len(), values.len());
        Row { columns, values }
    }

    /// The names of the row's columns, in the query's order.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// The row's values, in the query's order (for code that copies whole rows
    /// whatever their columns, such as `db::copy`).
    pub fn values(&self) -> &[Value] {
        &self.values
    }

    /// The value of column `name`; a name the row does not have is a
    /// [`Decode::Missing`] listing the names it has.
    fn value(&self, name: &str) -> Result<&Value, Decode> {
        match self.columns.iter().position(|c| c == name) {
            Some(index) => Ok(&self.values[index]),
            None => Err(Decode::Missing {
                column: name.to_string(),
                columns: self.columns.to_vec(),
            }),
        }
    }

    /// Column `name` as `T` (`Option<T>` where it may be `NULL`).
    pub fn get<T: FromValue>(&self, name: &str) -> Result<T, Decode> {
        let value = self.value(name)?;
        T::from_value(value).ok_or_else(|| Decode::Type {
            column: name.to_string(),
            expected: T::EXPECTED,
            found: value.kind(),
        })
    }

    /// Column `name`, read through its text into `T` (a role, a digest, a time).
    pub fn parsed<T>(&self, name: &str) -> Result<T, Decode>
    where
        T: std::str::FromStr,
        T::Err: std::fmt::Display,
    {
        self.parsed_with(name, |text| text.parse().map_err(|e: T::Err| e.to_string()))
    }

    /// Column `name`'s text read by `parse` (a JSON document, one of a few
    /// words): its error becomes a [`Decode::Parse`] naming the column.
    pub fn parsed_with<T>(
        &self,
        name: &str,
        parse: impl FnOnce(&str) -> Result<T, String>,
    ) -> Result<T, Decode> {
        let text: String = self.get(name)?;
        parse(&text).map_err(|message| Decode::Parse {
            column: name.to_string(),
            message,
            value: text,
        })
    }

    /// [`Row::parsed`] for a column that may be `NULL`.
    pub fn parsed_opt<T>(&self, name: &str) -> Result<Option<T>, Decode>
    where
        T: std::str::FromStr,
        T::Err: std::fmt::Display,
    {
        match self.value(name)? {
            Value::Null => Ok(None),
            _ => self.parsed(name).map(Some),
        }
    }
}

/// A struct a module returns, built from one row by column name: each query's
/// columns map to their fields in one place.
pub trait FromRow: Sized {
    fn from_row(row: &Row) -> Result<Self, Decode>;
}

/// Every row of `rows` as a `T`.
pub fn from_rows<T: FromRow>(rows: &[Row]) -> Result<Vec<T>, Decode> {
    rows.iter().map(T::from_row).collect()
}

/// A Rust type a column is read as.
pub trait FromValue: Sized {
    const EXPECTED: &'static str;
    fn from_value(value: &Value) -> Option<Self>;
}

impl FromValue for String {
    const EXPECTED: &'static str = "text";
    fn from_value(value: &Value) -> Option<Self> {
        match value {
            Value::Text(text) => Some(text.clone()),
            _ => None,
        }
    }
}

impl FromValue for i64 {
    const EXPECTED: &'static str = "an integer";
    fn from_value(value: &Value) -> Option<Self> {
        match value {
            Value::Int(n) => Some(*n),
            _ => None,
        }
    }
}

impl FromValue for u64 {
    const EXPECTED: &'static str = "a non-negative integer";
    fn from_value(value: &Value) -> Option<Self> {
        i64::from_value(value).and_then(|n| u64::try_from(n).ok())
    }
}

impl FromValue for bool {
    const EXPECTED: &'static str = "0 or 1";
    fn from_value(value: &Value) -> Option<Self> {
        match value {
            Value::Int(0) => Some(false),
            Value::Int(1) => Some(true),
            _ => None,
        }
    }
}

impl FromValue for Vec<u8> {
    const EXPECTED: &'static str = "bytes";
    fn from_value(value: &Value) -> Option<Self> {
        match value {
            Value::Bytes(bytes) => Some(bytes.clone()),
            _ => None,
        }
    }
}

impl FromValue for crate::timestamp::Timestamp {
    const EXPECTED: &'static str = "an RFC 3339 time";
    fn from_value(value: &Value) -> Option<Self> {
        match value {
            Value::Text(text) => text.parse().ok(),
            _ => None,
        }
    }
}

impl<T: FromValue> FromValue for Option<T> {
    const EXPECTED: &'static str = T::EXPECTED;
    fn from_value(value: &Value) -> Option<Self> {
        match value {
            Value::Null => Some(None),
            other => T::from_value(other).map(Some),
        }
    }
}

/// A connection or transaction of either backend. `Error` is the backend's own
/// (so SQLite callers keep `rusqlite::Result` while modules move over one by one);
/// a row that does not read as asked becomes one through `From<Decode>`.
pub trait Sql {
    type Error: From<Decode> + std::error::Error;

    /// Which SQL this connection speaks, for the few statements written per dialect.
    fn dialect(&self) -> Dialect;

    /// `texts`' statement for this connection's dialect.
    fn text(&self, texts: &Dialects) -> &'static str {
        match self.dialect() {
            Dialect::Sqlite => texts.sqlite,
            Dialect::Postgres => texts.postgres,
        }
    }

    /// Runs one statement; returns how many rows it changed.
    fn execute(&self, sql: &str, params: &[Param<'_>]) -> Result<u64, Self::Error>;

    /// Every row of one query.
    fn query(&self, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>, Self::Error>;

    /// The first row of one query, if any.
    fn query_opt(&self, sql: &str, params: &[Param<'_>]) -> Result<Option<Row>, Self::Error> {
        Ok(self.query(sql, params)?.into_iter().next())
    }

    /// The first row of a query that always returns one (`COUNT`, `EXISTS`).
    fn query_one(&self, sql: &str, params: &[Param<'_>]) -> Result<Row, Self::Error> {
        Ok(self.query_opt(sql, params)?.ok_or(Decode::NoRow)?)
    }

    /// Holds `lock` until the transaction ends (see [`super::locks`]). Nothing to do
    /// where writers take turns anyway (SQLite's one writer).
    fn lock(&self, lock: super::locks::Lock<'_>) -> Result<(), Self::Error> {
        let _ = lock;
        Ok(())
    }

    /// Holds `lock` *shared* until the transaction ends: beside others holding it
    /// shared, apart from one holding it exclusively (gc deleting a blob a push
    /// names). Nothing to do on SQLite, as [`Sql::lock`].
    fn lock_shared(&self, lock: super::locks::Lock<'_>) -> Result<(), Self::Error> {
        let _ = lock;
        Ok(())
    }

    /// [`Sql::lock_shared`] for each of `locks`, in the one order.
    fn share_all(&self, locks: &[super::locks::Lock<'_>]) -> Result<(), Self::Error> {
        for lock in super::locks::ordered(locks) {
            self.lock_shared(lock)?;
        }
        Ok(())
    }

    /// Holds each of `locks`, in the one order ([`super::locks::ordered`]): what a
    /// write takes midway, once it has read what it must hold.
    fn lock_all(&self, locks: &[super::locks::Lock<'_>]) -> Result<(), Self::Error> {
        for lock in super::locks::ordered(locks) {
            self.lock(lock)?;
        }
        Ok(())
    }
}

/// The two SQL dialects the registry's database speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

/// One statement written out in each dialect, where the two differ: SQLite's
/// planner hints (`INDEXED BY name`, which holds a query to the index its page
/// must read, see `tests/it/query_plans.rs`) have no PostgreSQL syntax, and
/// PostgreSQL plans by its own statistics.
#[derive(Clone, Copy, Debug)]
pub struct Dialects {
    pub sqlite: &'static str,
    pub postgres: &'static str,
}

/// Binds `params` to `statement`'s parameters by number: `$N` (or `?N`) takes
/// `params[N - 1]` wherever it stands. SQLite numbers a named parameter (`$N` is
/// one to it) by where it first appears, so binding by position would give `$2`
/// the first value in `WHERE b = $2 AND a = $1`. Every parameter up to the highest
/// must be given, and no more, as `rusqlite` checks for its own binding.
pub(crate) fn bind_numbered<T: rusqlite::ToSql>(
    statement: &mut rusqlite::Statement<'_>,
    params: &[T],
) -> rusqlite::Result<()> {
    let mut highest = 0;
    for index in 1..=statement.parameter_count() {
        let name = statement.parameter_name(index).unwrap_or("?");
        let number = name
            .strip_prefix(['$', '?'])
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| *n > 0)
            .ok_or_else(|| rusqlite::Error::InvalidParameterName(name.to_string()))?;
        let value = params
            .get(number - 1)
            .ok_or(rusqlite::Error::InvalidParameterCount(number, params.len()))?;
        statement.raw_bind_parameter(index, value)?;
        highest = highest.max(number);
    }
    if highest != params.len() {
        return Err(rusqlite::Error::InvalidParameterCount(
            params.len(),
            highest,
        ));
    }
    Ok(())
}

impl rusqlite::ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match *self {
            Param::Null => ValueRef::Null,
            Param::Int(n) => ValueRef::Integer(n),
            Param::Text(text) => ValueRef::Text(text.as_bytes()),
            Param::Bytes(bytes) => ValueRef::Blob(bytes),
        }))
    }
}

impl From<Decode> for rusqlite::Error {
    fn from(e: Decode) -> Self {
        match e {
            Decode::NoRow => rusqlite::Error::QueryReturnedNoRows,
            // rusqlite's own "unknown column" index: its `Display` is then ours
            // alone, which names the column.
            Decode::Missing { .. }
            | Decode::Type { .. }
            | Decode::Parse { .. }
            | Decode::Unsupported { .. } => rusqlite::Error::FromSqlConversionFailure(
                usize::MAX,
                rusqlite::types::Type::Null,
                Box::new(e),
            ),
        }
    }
}

pub(crate) fn sqlite_value(value: rusqlite::types::ValueRef<'_>) -> Value {
    use rusqlite::types::ValueRef;
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(n) => Value::Int(n),
        ValueRef::Real(x) => Value::Real(x),
        ValueRef::Text(text) => Value::Text(String::from_utf8_lossy(text).into_owned()),
        ValueRef::Blob(bytes) => Value::Bytes(bytes.to_vec()),
    }
}

/// SQLite: statements come from the connection's prepared-statement cache, as
/// they did before the trait.
impl Sql for rusqlite::Connection {
    type Error = rusqlite::Error;

    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn execute(&self, sql: &str, params: &[Param<'_>]) -> rusqlite::Result<u64> {
        let mut statement = self.prepare_cached(sql)?;
        bind_numbered(&mut statement, params)?;
        Ok(statement.raw_execute()? as u64)
    }

    fn query(&self, sql: &str, params: &[Param<'_>]) -> rusqlite::Result<Vec<Row>> {
        let mut statement = self.prepare_cached(sql)?;
        let names: Arc<[String]> = statement
            .column_names()
            .into_iter()
            .map(str::to_string)
            .collect();
        bind_numbered(&mut statement, params)?;
        let mut rows = statement.raw_query();
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            let values = (0..names.len())
                .map(|i| row.get_ref(i).map(sqlite_value))
                .collect::<rusqlite::Result<_>>()?;
            out.push(Row::new(names.clone(), values));
        }
        Ok(out)
    }
}

/// A write transaction runs on its connection.
impl Sql for rusqlite::Transaction<'_> {
    type Error = rusqlite::Error;

    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn execute(&self, sql: &str, params: &[Param<'_>]) -> rusqlite::Result<u64> {
        Sql::execute(&**self, sql, params)
    }

    fn query(&self, sql: &str, params: &[Param<'_>]) -> rusqlite::Result<Vec<Row>> {
        Sql::query(&**self, sql, params)
    }
}

/// PostgreSQL's failures: the server's or the connection's, or a row that does
/// not read as asked.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    #[error("postgresql: {}", server_said(.0))]
    Postgres(#[from] postgres::Error),
    #[error("postgresql: {0}")]
    Decode(#[from] Decode),
    #[error("postgresql schema version {found} is newer than this build's {known}")]
    Newer { found: u32, known: u32 },
}

/// A `postgres::Error` with what the server said: its own `Display` is only
/// "db error" for every refusal (a duplicate key, a failed trigger, a wrong
/// type), which tells nobody what to fix. The message names tables, columns,
/// constraints and users; its `DETAIL` (left out) may quote a row's values, such
/// as a token's hash. A client-side error (a closed connection, I/O) is the
/// client's text and its cause, which never hold the connection URL.
fn server_said(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{e}: {} (SQLSTATE {})", db.message(), db.code().code()),
        // "error connecting to server" alone does not say whether the server
        // refused, timed out or was not found: its cause (an I/O error, never the
        // URL) does.
        None => match std::error::Error::source(e) {
            Some(cause) => format!("{e}: {cause}"),
            None => e.to_string(),
        },
    }
}

impl PgError {
    /// Whether the server broke the statement off because another transaction got
    /// in the way (a deadlock, a serialization failure): the transaction may run
    /// again and succeed.
    pub fn conflicted(&self) -> bool {
        let PgError::Postgres(e) = self else {
            return false;
        };
        let code = e.code();
        code == Some(&postgres::error::SqlState::T_R_DEADLOCK_DETECTED)
            || code == Some(&postgres::error::SqlState::T_R_SERIALIZATION_FAILURE)
    }

    /// Whether the server could not be reached or the connection was lost (as
    /// opposed to a statement it refused): the request may succeed once it is back,
    /// so it is answered 503, not 500.
    pub fn is_unavailable(&self) -> bool {
        match self {
            PgError::Postgres(e) => {
                let io = e.as_db_error().is_none()
                    && std::error::Error::source(e)
                        .is_some_and(|source| source.downcast_ref::<std::io::Error>().is_some());
                e.is_closed()
                    || io
                    || e.code().is_some_and(|code| {
                        code.code().starts_with("08")
                            || code == &postgres::error::SqlState::ADMIN_SHUTDOWN
                            || code == &postgres::error::SqlState::CRASH_SHUTDOWN
                            || code == &postgres::error::SqlState::CANNOT_CONNECT_NOW
                            || code == &postgres::error::SqlState::TOO_MANY_CONNECTIONS
                    })
            }
            PgError::Decode(_) | PgError::Newer { .. } => false,
        }
    }
}

/// A database call's failure on either backend: what [`Conn`] answers, so a
/// closure given to `Db` is written once for both.
#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    #[error("database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("database: {0}")]
    Postgres(PgError),
    #[error("database: {0}")]
    Decode(#[from] Decode),
    /// A call only the SQLite backend can make yet (see `POSTGRES.md`).
    #[error("database: {0} is not yet available on PostgreSQL")]
    NotOnPostgres(&'static str),
}

impl From<PgError> for SqlError {
    fn from(e: PgError) -> Self {
        match e {
            PgError::Decode(decode) => SqlError::Decode(decode),
            other => SqlError::Postgres(other),
        }
    }
}

impl SqlError {
    /// Whether the database could not be reached (see [`PgError::is_unavailable`]).
    pub fn is_unavailable(&self) -> bool {
        match self {
            SqlError::Postgres(e) => e.is_unavailable(),
            SqlError::Sqlite(_) | SqlError::Decode(_) | SqlError::NotOnPostgres(_) => false,
        }
    }

    /// The SQLite error inside, for the callers that match on one (a constraint
    /// refused, no row).
    pub fn sqlite(&self) -> Option<&rusqlite::Error> {
        match self {
            SqlError::Sqlite(e) => Some(e),
            _ => None,
        }
    }
}

/// A connection or transaction of whichever backend `Db` runs on, handed to its
/// closures: the `db/` functions, generic over [`Sql`], take it as they take a
/// SQLite connection, and answer [`SqlError`] on both backends.
#[derive(Clone, Copy)]
pub enum Conn<'a> {
    Sqlite(&'a rusqlite::Connection),
    Postgres(&'a dyn Sql<Error = PgError>),
}

impl Sql for Conn<'_> {
    type Error = SqlError;

    fn dialect(&self) -> Dialect {
        match self {
            Conn::Sqlite(_) => Dialect::Sqlite,
            Conn::Postgres(_) => Dialect::Postgres,
        }
    }

    fn execute(&self, sql: &str, params: &[Param<'_>]) -> Result<u64, SqlError> {
        match self {
            Conn::Sqlite(c) => Ok(Sql::execute(*c, sql, params)?),
            Conn::Postgres(c) => Ok(c.execute(sql, params)?),
        }
    }

    fn query(&self, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>, SqlError> {
        match self {
            Conn::Sqlite(c) => Ok(Sql::query(*c, sql, params)?),
            Conn::Postgres(c) => Ok(c.query(sql, params)?),
        }
    }

    fn lock(&self, lock: super::locks::Lock<'_>) -> Result<(), SqlError> {
        match self {
            Conn::Sqlite(_) => Ok(()),
            Conn::Postgres(c) => Ok(c.lock(lock)?),
        }
    }

    fn lock_shared(&self, lock: super::locks::Lock<'_>) -> Result<(), SqlError> {
        match self {
            Conn::Sqlite(_) => Ok(()),
            Conn::Postgres(c) => Ok(c.lock_shared(lock)?),
        }
    }
}

impl<'a> Conn<'a> {
    /// The SQLite connection, for a call not yet generic over [`Sql`]; on
    /// PostgreSQL a [`SqlError::NotOnPostgres`] naming `what`.
    pub fn sqlite(&self, what: &'static str) -> Result<&'a rusqlite::Connection, SqlError> {
        match self {
            Conn::Sqlite(c) => Ok(c),
            Conn::Postgres(_) => Err(SqlError::NotOnPostgres(what)),
        }
    }
}

/// A PostgreSQL client or transaction behind [`Sql`]. The `postgres` crate wants
/// `&mut` for every call; the modules take `&` (as they do a SQLite connection),
/// so the client sits in a `RefCell`: one thread, one call at a time.
///
/// Statements are prepared once per connection, kept in its [`Statements`], and
/// run again by their handle: one round trip per query, not two (parse and
/// describe, then execute), as SQLite's `prepare_cached` does.
pub struct Pg<'s, C> {
    client: RefCell<C>,
    statements: Option<&'s Statements>,
    /// Whether a statement failed because another transaction got in the way
    /// (a deadlock or a serialization failure), so the transaction may run again.
    conflicted: std::cell::Cell<bool>,
}

/// One connection's prepared statements, by their text as written.
#[derive(Default)]
pub struct Statements(RefCell<std::collections::HashMap<String, postgres::Statement>>);

impl<C: postgres::GenericClient> Pg<'static, C> {
    /// Without a statement cache: each query is prepared as it runs.
    pub fn new(client: C) -> Pg<'static, C> {
        Pg {
            client: RefCell::new(client),
            statements: None,
            conflicted: std::cell::Cell::new(false),
        }
    }
}

impl<'s, C: postgres::GenericClient> Pg<'s, C> {
    /// With the statements prepared on this connection before (a transaction's
    /// too: prepared statements belong to the connection).
    pub fn cached(client: C, statements: &'s Statements) -> Pg<'s, C> {
        Pg {
            client: RefCell::new(client),
            statements: Some(statements),
            conflicted: std::cell::Cell::new(false),
        }
    }

    pub fn into_inner(self) -> C {
        self.client.into_inner()
    }

    /// Whether a statement failed on a deadlock or a serialization failure.
    pub fn conflicted(&self) -> bool {
        self.conflicted.get()
    }

    fn statement(&self, sql: &str) -> Result<postgres::Statement, PgError> {
        let prepare = || -> Result<postgres::Statement, PgError> {
            Ok(self.client.borrow_mut().prepare(sql)?)
        };
        let Some(statements) = self.statements else {
            return prepare();
        };
        if let Some(statement) = statements.0.borrow().get(sql) {
            return Ok(statement.clone());
        }
        let statement = prepare()?;
        let mut cache = statements.0.borrow_mut();
        // A connection's cache holds the statements the code has, a few hundred;
        // a text built at run time (a fleet filter's combination) adds to them,
        // so the cache is emptied rather than let grow without end.
        if cache.len() >= STATEMENTS_PER_CONNECTION {
            cache.clear();
        }
        cache.insert(sql.to_string(), statement.clone());
        Ok(statement)
    }

    fn noted<T>(&self, answer: Result<T, postgres::Error>) -> Result<T, PgError> {
        answer.map_err(|e| {
            let e = PgError::from(e);
            if e.conflicted() {
                self.conflicted.set(true);
            }
            e
        })
    }

    /// Holds the one-key advisory lock `key` shared until the transaction ends.
    pub fn shared(&self, key: i64) -> Result<(), PgError> {
        self.advisory("SELECT pg_advisory_xact_lock_shared($1)", &[&key])
    }

    /// Runs one of the advisory-lock statements, noting a deadlock it ends in.
    fn advisory(
        &self,
        statement: &str,
        keys: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<(), PgError> {
        let answer = self.client.borrow_mut().execute(statement, keys);
        self.noted(answer).map(drop)
    }
}

/// How many prepared statements a connection keeps.
const STATEMENTS_PER_CONNECTION: usize = 512;

impl<C: postgres::GenericClient> Sql for Pg<'_, C> {
    type Error = PgError;

    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn execute(&self, sql: &str, params: &[Param<'_>]) -> Result<u64, PgError> {
        let params = pg_params(params);
        let statement = self.statement(sql)?;
        let answer = self.client.borrow_mut().execute(&statement, &params);
        self.noted(answer)
    }

    fn query(&self, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>, PgError> {
        let params = pg_params(params);
        let statement = self.statement(sql)?;
        let answer = self.client.borrow_mut().query(&statement, &params);
        let rows = self.noted(answer)?;
        let names = column_names(&statement);
        rows.iter()
            .map(|row| Ok(Row::new(names.clone(), pg_values(row)?)))
            .collect()
    }

    fn lock(&self, lock: super::locks::Lock<'_>) -> Result<(), PgError> {
        let (class, key) = lock.key();
        self.advisory("SELECT pg_advisory_xact_lock($1, $2)", &[&class, &key])
    }

    fn lock_shared(&self, lock: super::locks::Lock<'_>) -> Result<(), PgError> {
        let (class, key) = lock.key();
        self.advisory(
            "SELECT pg_advisory_xact_lock_shared($1, $2)",
            &[&class, &key],
        )
    }
}

/// Parameters as the PostgreSQL client takes them.
pub(crate) fn pg_params<'a>(
    params: &'a [Param<'_>],
) -> Vec<&'a (dyn postgres::types::ToSql + Sync)> {
    params.iter().map(|p| p as _).collect()
}

/// A statement's column names, once per statement from its description: every row
/// it answers shares them.
pub(crate) fn column_names(statement: &postgres::Statement) -> Arc<[String]> {
    statement
        .columns()
        .iter()
        .map(|c| c.name().to_string())
        .collect()
}

pub(crate) fn pg_values(row: &postgres::Row) -> Result<Vec<Value>, PgError> {
    use postgres::types::Type;
    let mut values = Vec::with_capacity(row.len());
    for (i, column) in row.columns().iter().enumerate() {
        let ty = column.type_();
        let value = if *ty == Type::INT8 {
            row.try_get::<_, Option<i64>>(i)?.map(Value::Int)
        } else if *ty == Type::INT4 {
            row.try_get::<_, Option<i32>>(i)?
                .map(|n| Value::Int(n.into()))
        } else if *ty == Type::INT2 {
            row.try_get::<_, Option<i16>>(i)?
                .map(|n| Value::Int(n.into()))
        } else if *ty == Type::BOOL {
            row.try_get::<_, Option<bool>>(i)?
                .map(|b| Value::Int(b.into()))
        } else if *ty == Type::FLOAT8 {
            row.try_get::<_, Option<f64>>(i)?.map(Value::Real)
        } else if [Type::TEXT, Type::VARCHAR, Type::BPCHAR, Type::NAME].contains(ty) {
            row.try_get::<_, Option<String>>(i)?.map(Value::Text)
        } else if *ty == Type::BYTEA {
            row.try_get::<_, Option<Vec<u8>>>(i)?.map(Value::Bytes)
        } else {
            return Err(Decode::Unsupported {
                column: column.name().to_string(),
                type_name: ty.name().to_string(),
            }
            .into());
        };
        values.push(value.unwrap_or(Value::Null));
    }
    Ok(values)
}

/// Parameters are sent in binary, typed by the server's inference: an integer to a
/// `BIGINT` (or narrower, range-checked) or `BOOLEAN`, text to text, bytes to
/// `BYTEA`; anything else is refused naming both types, before it is sent.
impl postgres::types::ToSql for Param<'_> {
    fn to_sql(
        &self,
        ty: &postgres::types::Type,
        out: &mut bytes::BytesMut,
    ) -> Result<postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        use postgres::types::{IsNull, ToSql, Type};
        fn checked<T: ToSql>(
            value: T,
            ty: &Type,
            out: &mut bytes::BytesMut,
        ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
            if !T::accepts(ty) {
                let rust = std::any::type_name::<T>();
                return Err(format!("a `{rust}` parameter for a `{ty}` column").into());
            }
            value.to_sql(ty, out)
        }
        match *self {
            Param::Null => Ok(IsNull::Yes),
            Param::Int(n) if *ty == Type::BOOL => checked(n != 0, ty, out),
            Param::Int(n) if *ty == Type::INT4 => checked(i32::try_from(n)?, ty, out),
            Param::Int(n) if *ty == Type::INT2 => checked(i16::try_from(n)?, ty, out),
            Param::Int(n) => checked(n, ty, out),
            Param::Text(text) => checked(text, ty, out),
            Param::Bytes(bytes) => checked(bytes, ty, out),
        }
    }

    fn accepts(_: &postgres::types::Type) -> bool {
        true
    }

    postgres::types::to_sql_checked!();
}

#[cfg(test)]
mod tests {
    use super::{Decode, Param, Sql};

    #[test]
    fn a_column_the_row_does_not_have_is_a_decode_error_naming_it_and_those_it_has() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let row = Sql::query_one(&conn, "SELECT 1 AS n, 'x' AS name", &[]).unwrap();
        assert_eq!(row.get::<i64>("n").unwrap(), 1);
        assert_eq!(row.get::<String>("name").unwrap(), "x");
        let e = row.get::<i64>("count").unwrap_err();
        assert!(matches!(&e, Decode::Missing { column, .. } if column == "count"));
        assert_eq!(
            e.to_string(),
            "the row has no column `count` (it has `n`, `name`)"
        );
        // Through rusqlite's error, as a module on SQLite answers it: the same words.
        assert_eq!(
            rusqlite::Error::from(e).to_string(),
            "the row has no column `count` (it has `n`, `name`)"
        );
        let e = row.get::<i64>("name").unwrap_err();
        assert_eq!(e.to_string(), "column `name` is text, not an integer");
        let e = row.parsed::<u8>("name").unwrap_err();
        assert_eq!(
            e.to_string(),
            "column `name` holds `x`: invalid digit found in string"
        );
    }

    #[test]
    fn parameters_bind_by_their_number_not_where_they_first_appear() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let row = Sql::query_one(
            &conn,
            "SELECT $2 AS b, $1 AS a, $2 || $1 AS ba",
            &[Param::Text("a"), Param::Text("b")],
        )
        .unwrap();
        assert_eq!(row.get::<String>("a").unwrap(), "a");
        assert_eq!(row.get::<String>("b").unwrap(), "b");
        assert_eq!(row.get::<String>("ba").unwrap(), "ba");
    }

    #[test]
    fn a_parameter_missing_or_one_too_many_is_refused() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let e = Sql::query(&conn, "SELECT $2 AS b", &[Param::Int(1)]).unwrap_err();
        assert!(
            matches!(e, rusqlite::Error::InvalidParameterCount(2, 1)),
            "{e:?}"
        );
        let e = Sql::query(&conn, "SELECT $1 AS a", &[Param::Int(1), Param::Int(2)]).unwrap_err();
        assert!(
            matches!(e, rusqlite::Error::InvalidParameterCount(2, 1)),
            "{e:?}"
        );
        let e = Sql::query(&conn, "SELECT :a AS a", &[Param::Int(1)]).unwrap_err();
        assert!(
            matches!(e, rusqlite::Error::InvalidParameterName(_)),
            "{e:?}"
        );
    }
}
