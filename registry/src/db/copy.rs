//! The copy `stackpack-registry migrate --to postgres://…` runs (issue 27, plan
//! item 4 in `POSTGRES.md`): a registry's SQLite database into an empty PostgreSQL
//! one, all of it in one PostgreSQL transaction, checked before it commits.
//!
//! Nothing here knows a table: the tables both sides have are found by asking
//! both, ordered parents first by PostgreSQL's own foreign keys, and their columns
//! read from `pragma_table_info` and `information_schema.columns`. A table the
//! PostgreSQL schema gains later (the ledger's, the fleet's, rollouts) is copied
//! as soon as its migration exists; until then an SQLite table holding rows that
//! PostgreSQL has no table for makes the whole copy refuse rather than leave
//! those rows behind.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use postgres::fallible_iterator::FallibleIterator;
use rusqlite::{Connection, OpenFlags};
use sha2::{Digest as _, Sha256};

use super::sql::{pg_params, pg_values, sqlite_value, Param, PgError, Value};

/// Columns SQLite keeps for its own purposes, which PostgreSQL's schema does not
/// have, as (table, column, why). Empty today: every SQLite column has its
/// PostgreSQL twin. A column found on one side only and not listed here stops the
/// copy, naming it, rather than dropping data silently.
pub const SQLITE_ONLY_COLUMNS: &[(&str, &str, &str)] = &[];

/// The PostgreSQL table keeping the schema version (`pg::migrate`'s), which
/// SQLite keeps in `PRAGMA user_version`: not copied, and not data.
const PG_VERSION_TABLE: &str = "schema_version";

/// How many rows one `INSERT` carries: fewer round trips than one per row, and
/// far under PostgreSQL's 65,535 parameters for any table here.
const BATCH_ROWS: usize = 500;

/// What the copy was doing when PostgreSQL failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Migrate,
    ReadSchema,
    CheckEmpty,
    Insert,
    Verify,
    Identity,
    Triggers,
    Settings,
    Analyze,
    Commit,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Step::Migrate => "migrating the schema",
            Step::ReadSchema => "reading the schema",
            Step::CheckEmpty => "checking the target is empty",
            Step::Insert => "inserting rows",
            Step::Verify => "reading the rows back",
            Step::Identity => "moving an identity column's sequence",
            Step::Triggers => "holding the tables' triggers during the copy",
            Step::Settings => "recording the registry's settings",
            Step::Analyze => "gathering the planner's statistics",
            Step::Commit => "committing",
        })
    }
}

/// Which side of the copy a column or count was found on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Sqlite,
    Postgres,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Sqlite => "SQLite",
            Side::Postgres => "PostgreSQL",
        })
    }
}

/// How a table read back from PostgreSQL differs from SQLite's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Difference {
    Rows { sqlite: u64, postgres: u64 },
    Digest { sqlite: String, postgres: String },
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Difference::Rows { sqlite, postgres } => {
                write!(f, "{sqlite} rows in SQLite, {postgres} in PostgreSQL")
            }
            Difference::Digest { sqlite, postgres } => write!(
                f,
                "the rows' SHA-256 is {sqlite} in SQLite, {postgres} in PostgreSQL"
            ),
        }
    }
}

/// Why a copy did not happen. Every refusal and failure leaves PostgreSQL's
/// tables as they were (the transaction is rolled back); the SQLite file is only
/// ever read. No variant holds a connection URL, so none prints a password.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    #[error("reading the SQLite database {}: {source}", path.display())]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("the SQLite database {} is at schema version {found}, older than this build's {current}: run `stackpack-registry migrate` on its data folder first, then copy it", path.display())]
    SqliteOlder {
        path: PathBuf,
        found: u32,
        current: u32,
    },
    #[error("the SQLite database {} is at schema version {found}, newer than this build's {current}: copy it with the `stackpack-registry` that wrote it", path.display())]
    SqliteNewer {
        path: PathBuf,
        found: u32,
        current: u32,
    },
    #[error("{step}{}: {source}", table.as_ref().map(|t| format!(" (table `{t}`)")).unwrap_or_default())]
    Postgres {
        step: Step,
        table: Option<String>,
        source: PgError,
    },
    #[error("the PostgreSQL database already holds rows in table `{table}`: copy only into an empty database (nothing was written)")]
    TargetNotEmpty { table: String },
    #[error("PostgreSQL has no table yet for {} (rows in SQLite): this build cannot copy them, so it copied nothing; use a build whose PostgreSQL schema has them", tables.join(", "))]
    TablesMissing { tables: Vec<String> },
    #[error("table `{table}`: column `{column}` is only in {only_in}; nothing was copied")]
    ColumnOnOneSide {
        table: String,
        column: String,
        only_in: Side,
    },
    #[error("table `{table}`, column `{column}` holds a real number, which no PostgreSQL column here takes; nothing was copied")]
    RealValue { table: String, column: String },
    #[error("PostgreSQL's foreign keys form a cycle among {}: no order copies parents first", tables.join(", "))]
    ForeignKeyCycle { tables: Vec<String> },
    #[error(
        "table `{table}` differs after the copy ({difference}): rolled back, nothing was written"
    )]
    Differs {
        table: String,
        difference: Difference,
    },
}

/// One table copied: its rows and their SHA-256 (the same on both sides).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableCopy {
    pub table: String,
    pub rows: u64,
    pub digest: String,
}

/// What a copy did, for the command to print.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    pub sqlite_version: u32,
    pub postgres_version: u32,
    /// In the order copied: parents first.
    pub tables: Vec<TableCopy>,
    /// SQLite tables PostgreSQL has none for yet, all of them empty.
    pub empty_sqlite_only: Vec<String>,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "copied SQLite schema {} into PostgreSQL schema {}:",
            self.sqlite_version, self.postgres_version
        )?;
        for t in &self.tables {
            writeln!(
                f,
                "  {:<28} {:>10} rows  sha256:{}",
                t.table, t.rows, t.digest
            )?;
        }
        if !self.empty_sqlite_only.is_empty() {
            writeln!(
                f,
                "  (empty, not in PostgreSQL yet: {})",
                self.empty_sqlite_only.join(", ")
            )?;
        }
        Ok(())
    }
}

/// One column both sides have.
struct Column {
    name: String,
    /// PostgreSQL stores it as text: ordered `COLLATE "C"` there, SQLite's byte order.
    text: bool,
    /// An identity (or serial) column on PostgreSQL: its sequence moves past the copy.
    identity: bool,
}

/// A table to copy: its columns in SQLite's order and the ones its rows sort by.
struct Table {
    name: String,
    columns: Vec<Column>,
    /// Indexes into `columns`: the primary key, or every column where there is none.
    key: Vec<usize>,
}

/// Copies the registry database at `sqlite` into the database `client` is
/// connected to: migrates PostgreSQL to its current schema, refuses a target
/// holding any row, copies every table both sides have in one transaction, and
/// commits only if each table's row count and digest read back from PostgreSQL
/// equal SQLite's.
pub fn copy(sqlite: &Path, client: &mut postgres::Client) -> Result<Summary, CopyError> {
    copy_recording(sqlite, client, &[])
}

/// [`copy`], then `settings` (`registry_settings` name and value) written over
/// the copied ones in the same transaction, after every table was checked: what
/// `migrate --to … --move-blobs-to s3://…` records as where the blobs live, so
/// PostgreSQL holds the rows and the new blob store together or neither.
pub fn copy_recording(
    sqlite: &Path,
    client: &mut postgres::Client,
    settings: &[(&str, &str)],
) -> Result<Summary, CopyError> {
    let source = open_sqlite(sqlite)?;
    let sqlite_err = |source| CopyError::Sqlite {
        path: sqlite.to_path_buf(),
        source,
    };
    let sqlite_version = sqlite_version(&source, sqlite)?;
    super::pg::migrate(client).map_err(pg(Step::Migrate, None))?;
    let postgres_version = super::pg::SCHEMA_VERSION;
    // One snapshot of SQLite for the whole copy, even if a registry still writes it.
    source.execute_batch("BEGIN").map_err(sqlite_err)?;
    let mut tx = client
        .transaction()
        .map_err(|e| pg(Step::ReadSchema, None)(e.into()))?;
    let (tables, empty_sqlite_only) = plan(&source, &mut tx).map_err(|e| e.at(sqlite))?;
    set_triggers(&mut tx, &tables, Triggers::Held)?;
    let mut copied = Vec::with_capacity(tables.len());
    for table in &tables {
        let (rows, digest) = copy_table(&source, &mut tx, table).map_err(|e| e.at(sqlite))?;
        let (pg_rows, pg_digest) = postgres_digest(&mut tx, table)?;
        if pg_rows != rows {
            return Err(differs(
                table,
                Difference::Rows {
                    sqlite: rows,
                    postgres: pg_rows,
                },
            ));
        }
        if pg_digest != digest {
            return Err(differs(
                table,
                Difference::Digest {
                    sqlite: digest,
                    postgres: pg_digest,
                },
            ));
        }
        move_identities(&mut tx, table)?;
        copied.push(TableCopy {
            table: table.name.clone(),
            rows,
            digest,
        });
    }
    set_triggers(&mut tx, &tables, Triggers::Firing)?;
    let mut tx = record_settings(tx, settings)?;
    // A bulk load leaves the planner no statistics until autovacuum's next pass:
    // the first support queries after a move would be planned blind. Gathered in
    // the copy's own transaction, so they commit with the rows.
    tx.batch_execute("ANALYZE")
        .map_err(|e| pg(Step::Analyze, None)(e.into()))?;
    tx.commit().map_err(|e| pg(Step::Commit, None)(e.into()))?;
    Ok(Summary {
        sqlite_version,
        postgres_version,
        tables: copied,
        empty_sqlite_only,
    })
}

/// Writes `settings` into `registry_settings` inside the copy's transaction.
fn record_settings<'a>(
    tx: postgres::Transaction<'a>,
    settings: &[(&str, &str)],
) -> Result<postgres::Transaction<'a>, CopyError> {
    let pg_tx = super::sql::Pg::new(tx);
    for (name, value) in settings {
        super::settings::set(&pg_tx, name, value)
            .map_err(pg(Step::Settings, Some("registry_settings")))?;
    }
    Ok(pg_tx.into_inner())
}

/// Migrates the PostgreSQL database `client` is connected to and refuses it if
/// any table holds a row, copying nothing: what `migrate --to` checks before it
/// moves a single blob, so a target it would refuse anyway costs no upload.
pub fn check_empty(client: &mut postgres::Client) -> Result<u32, CopyError> {
    let found = super::pg::migrate(client).map_err(pg(Step::Migrate, None))?;
    let mut tx = client
        .transaction()
        .map_err(|e| pg(Step::CheckEmpty, None)(e.into()))?;
    let order = postgres_tables_parents_first(&mut tx)?;
    refuse_rows(&mut tx, &order)?;
    Ok(found)
}

/// [`CopyError::TargetNotEmpty`] for the first of `tables` holding a row.
fn refuse_rows(tx: &mut postgres::Transaction<'_>, tables: &[String]) -> Result<(), CopyError> {
    for name in tables {
        let sql = format!("SELECT EXISTS (SELECT 1 FROM {}) AS found", quoted(name));
        let any: bool = tx
            .query_one(&sql, &[])
            .map_err(|e| pg(Step::CheckEmpty, Some(name))(e.into()))?
            .get("found");
        if any {
            return Err(CopyError::TargetNotEmpty {
                table: name.clone(),
            });
        }
    }
    Ok(())
}

/// Whether a table's own triggers fire on the rows the copy inserts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Triggers {
    Held,
    Firing,
}

/// Holds or releases the copied tables' own triggers (`DISABLE TRIGGER USER`:
/// foreign keys stay checked). The copy brings SQLite's rows as they are,
/// including those SQLite's triggers derived (the per-stack counts V16 keeps in
/// `fleet_stack_versions`): PostgreSQL's twins of those triggers firing on the
/// copied rows would count them a second time. `ALTER TABLE` is transactional, so
/// a failed copy leaves them as they were; the tables' owner (who migrated them)
/// may do it, no superuser needed.
fn set_triggers(
    tx: &mut postgres::Transaction<'_>,
    tables: &[Table],
    triggers: Triggers,
) -> Result<(), CopyError> {
    let switch = match triggers {
        Triggers::Held => "DISABLE",
        Triggers::Firing => "ENABLE",
    };
    for table in tables {
        let sql = format!("ALTER TABLE {} {switch} TRIGGER USER", quoted(&table.name));
        tx.batch_execute(&sql)
            .map_err(|e| pg(Step::Triggers, Some(&table.name))(e.into()))?;
    }
    Ok(())
}

fn differs(table: &Table, difference: Difference) -> CopyError {
    CopyError::Differs {
        table: table.name.clone(),
        difference,
    }
}

/// A PostgreSQL failure at `step`, in `table` if one.
fn pg(step: Step, table: Option<&str>) -> impl FnOnce(PgError) -> CopyError + '_ {
    move |source| CopyError::Postgres {
        step,
        table: table.map(str::to_string),
        source,
    }
}

/// An error on the way that may be SQLite's (its path added by [`Failure::at`]).
enum Failure {
    Sqlite(rusqlite::Error),
    Copy(CopyError),
}

impl From<rusqlite::Error> for Failure {
    fn from(e: rusqlite::Error) -> Self {
        Failure::Sqlite(e)
    }
}

impl From<CopyError> for Failure {
    fn from(e: CopyError) -> Self {
        Failure::Copy(e)
    }
}

impl Failure {
    fn at(self, path: &Path) -> CopyError {
        match self {
            Failure::Sqlite(source) => CopyError::Sqlite {
                path: path.to_path_buf(),
                source,
            },
            Failure::Copy(e) => e,
        }
    }
}

fn open_sqlite(path: &Path) -> Result<Connection, CopyError> {
    let open = || {
        // Read-only, and never created: a mistyped path is an error, not a new file.
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        Ok(conn)
    };
    open().map_err(|source| CopyError::Sqlite {
        path: path.to_path_buf(),
        source,
    })
}

fn sqlite_version(conn: &Connection, path: &Path) -> Result<u32, CopyError> {
    let found: u32 = conn
        .query_row("PRAGMA user_version", [], |r| r.get("user_version"))
        .map_err(|source| CopyError::Sqlite {
            path: path.to_path_buf(),
            source,
        })?;
    let current = super::SCHEMA_VERSION;
    let path = path.to_path_buf();
    match found.cmp(&current) {
        std::cmp::Ordering::Less => Err(CopyError::SqliteOlder {
            path,
            found,
            current,
        }),
        std::cmp::Ordering::Greater => Err(CopyError::SqliteNewer {
            path,
            found,
            current,
        }),
        std::cmp::Ordering::Equal => Ok(found),
    }
}

/// The tables to copy, parents first, and the empty SQLite tables PostgreSQL
/// lacks; refuses SQLite tables with rows PostgreSQL lacks, and a target that
/// holds any row.
fn plan(
    source: &Connection,
    tx: &mut postgres::Transaction<'_>,
) -> Result<(Vec<Table>, Vec<String>), Failure> {
    let sqlite_tables: Vec<String> = source
        .prepare(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
        )?
        .query_map([], |r| r.get("name"))?
        .collect::<rusqlite::Result<_>>()?;
    let order = postgres_tables_parents_first(tx)?;
    let in_postgres: BTreeSet<&str> = order.iter().map(String::as_str).collect();
    let mut missing = Vec::new();
    let mut empty_sqlite_only = Vec::new();
    for name in sqlite_tables
        .iter()
        .filter(|t| !in_postgres.contains(t.as_str()))
    {
        let any: bool = source.query_row(
            &format!("SELECT EXISTS (SELECT 1 FROM {}) AS found", quoted(name)),
            [],
            |r| r.get("found"),
        )?;
        if any {
            missing.push(name.clone());
        } else {
            empty_sqlite_only.push(name.clone());
        }
    }
    if !missing.is_empty() {
        return Err(CopyError::TablesMissing { tables: missing }.into());
    }
    refuse_rows(tx, &order)?;
    let in_sqlite: BTreeSet<&str> = sqlite_tables.iter().map(String::as_str).collect();
    let mut tables = Vec::new();
    for name in order.iter().filter(|t| in_sqlite.contains(t.as_str())) {
        tables.push(table(source, tx, name)?);
    }
    Ok((tables, empty_sqlite_only))
}

/// PostgreSQL's tables (but its version table), each after every table its
/// foreign keys reference; among those free to go, by name, so the order is the
/// same on every run.
fn postgres_tables_parents_first(
    tx: &mut postgres::Transaction<'_>,
) -> Result<Vec<String>, CopyError> {
    let schema = pg(Step::ReadSchema, None);
    let rows = tx
        .query(
            "SELECT table_name::text AS name FROM information_schema.tables
             WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'",
            &[],
        )
        .and_then(|tables| {
            let keys = tx.query(
                "SELECT child.relname::text AS child, parent.relname::text AS parent
                 FROM pg_constraint c
                 JOIN pg_class child ON child.oid = c.conrelid
                 JOIN pg_class parent ON parent.oid = c.confrelid
                 JOIN pg_namespace n ON n.oid = c.connamespace
                 WHERE c.contype = 'f' AND n.nspname = current_schema()",
                &[],
            )?;
            Ok((tables, keys))
        });
    let (tables, keys) = rows.map_err(|e| schema(e.into()))?;
    let mut parents: BTreeMap<String, BTreeSet<String>> = tables
        .iter()
        .map(|r| r.get::<_, String>("name"))
        .filter(|t| t != PG_VERSION_TABLE)
        .map(|t| (t, BTreeSet::new()))
        .collect();
    for key in &keys {
        let (child, parent): (String, String) = (key.get("child"), key.get("parent"));
        if child != parent {
            parents.entry(child).or_default().insert(parent);
        }
    }
    let mut order = Vec::with_capacity(parents.len());
    while !parents.is_empty() {
        let placed: BTreeSet<&String> = order.iter().collect();
        let Some(next) = parents
            .iter()
            .find(|(_, of)| {
                of.iter()
                    .all(|p| placed.contains(p) || !parents.contains_key(p))
            })
            .map(|(name, _)| name.clone())
        else {
            return Err(CopyError::ForeignKeyCycle {
                tables: parents.into_keys().collect(),
            });
        };
        parents.remove(&next);
        order.push(next);
    }
    Ok(order)
}

/// One table's shared columns, checked: a column on one side only stops the copy
/// unless [`SQLITE_ONLY_COLUMNS`] says why SQLite has it.
fn table(
    source: &Connection,
    tx: &mut postgres::Transaction<'_>,
    name: &str,
) -> Result<Table, Failure> {
    // (name, position in the primary key, 0 when not in it), in SQLite's order.
    let sqlite_columns: Vec<(String, i64)> = source
        .prepare("SELECT name, pk FROM pragma_table_info(?1) ORDER BY cid")?
        .query_map([name], |r| Ok((r.get("name")?, r.get("pk")?)))?
        .collect::<rusqlite::Result<_>>()?;
    let rows = tx
        .query(
            "SELECT column_name::text AS name,
                    data_type::text IN ('text', 'character varying', 'character') AS is_text,
                    is_identity = 'YES' OR COALESCE(column_default LIKE 'nextval(%', false)
                        AS is_identity
             FROM information_schema.columns
             WHERE table_schema = current_schema() AND table_name = $1",
            &[&name],
        )
        .map_err(|e| pg(Step::ReadSchema, Some(name))(e.into()))?;
    let mut postgres_columns: BTreeMap<String, (bool, bool)> = rows
        .iter()
        .map(|r| (r.get("name"), (r.get("is_text"), r.get("is_identity"))))
        .collect();
    let mut columns = Vec::new();
    let mut key = Vec::new();
    for (column, pk) in sqlite_columns {
        let Some((text, identity)) = postgres_columns.remove(&column) else {
            if SQLITE_ONLY_COLUMNS
                .iter()
                .any(|(t, c, _)| *t == name && *c == column)
            {
                continue;
            }
            return Err(one_side(name, column, Side::Sqlite).into());
        };
        if pk > 0 {
            key.push((pk, columns.len()));
        }
        columns.push(Column {
            name: column,
            text,
            identity,
        });
    }
    if let Some(column) = postgres_columns.into_keys().next() {
        return Err(one_side(name, column, Side::Postgres).into());
    }
    key.sort();
    let mut key: Vec<usize> = key.into_iter().map(|(_, i)| i).collect();
    if key.is_empty() {
        key = (0..columns.len()).collect();
    }
    Ok(Table {
        name: name.to_string(),
        columns,
        key,
    })
}

fn one_side(table: &str, column: String, only_in: Side) -> CopyError {
    CopyError::ColumnOnOneSide {
        table: table.to_string(),
        column,
        only_in,
    }
}

/// `name` as an SQL identifier, the same on both backends.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `SELECT` of `table`'s shared columns in key order. PostgreSQL orders text
/// `COLLATE "C"` (bytes, as SQLite does) and both put `NULL` first, as SQLite
/// does by default, so both sides read the rows in one order.
fn select_in_key_order(table: &Table, side: Side) -> String {
    let list: Vec<String> = table.columns.iter().map(|c| quoted(&c.name)).collect();
    let order: Vec<String> = table
        .key
        .iter()
        .map(|&i| {
            let column = &table.columns[i];
            let collate = if side == Side::Postgres && column.text {
                " COLLATE \"C\""
            } else {
                ""
            };
            format!("{}{collate} NULLS FIRST", quoted(&column.name))
        })
        .collect();
    format!(
        "SELECT {} FROM {} ORDER BY {}",
        list.join(", "),
        quoted(&table.name),
        order.join(", ")
    )
}

/// The running SHA-256 of a table's rows, each value tagged with its kind and
/// text and bytes with their length, so no two different rows read alike.
struct RowDigest {
    hash: Sha256,
    rows: u64,
}

impl RowDigest {
    fn new() -> RowDigest {
        RowDigest {
            hash: Sha256::new(),
            rows: 0,
        }
    }

    fn add(&mut self, row: &[Value]) {
        for value in row {
            match value {
                Value::Null => self.hash.update(b"N"),
                Value::Int(n) => {
                    self.hash.update(b"I");
                    self.hash.update(n.to_be_bytes());
                }
                Value::Real(x) => {
                    self.hash.update(b"R");
                    self.hash.update(x.to_bits().to_be_bytes());
                }
                Value::Text(text) => self.tagged(b"T", text.as_bytes()),
                Value::Bytes(bytes) => self.tagged(b"B", bytes),
            }
        }
        self.rows += 1;
    }

    fn tagged(&mut self, tag: &[u8], bytes: &[u8]) {
        self.hash.update(tag);
        self.hash.update((bytes.len() as u64).to_be_bytes());
        self.hash.update(bytes);
    }

    fn finish(self) -> (u64, String) {
        (self.rows, hex::encode(self.hash.finalize()))
    }
}

/// Streams `table` from SQLite into PostgreSQL in key order, [`BATCH_ROWS`] at a
/// time; returns its row count and digest as SQLite read them.
fn copy_table(
    source: &Connection,
    tx: &mut postgres::Transaction<'_>,
    table: &Table,
) -> Result<(u64, String), Failure> {
    let mut statement = source.prepare(&select_in_key_order(table, Side::Sqlite))?;
    let mut rows = statement.query([])?;
    let mut digest = RowDigest::new();
    let mut batch: Vec<Vec<Value>> = Vec::with_capacity(BATCH_ROWS);
    let full = insert_statement(table, BATCH_ROWS);
    let full = tx
        .prepare(&full)
        .map_err(|e| pg(Step::Insert, Some(&table.name))(e.into()))?;
    while let Some(row) = rows.next()? {
        let values = (0..table.columns.len())
            .map(|i| row.get_ref(i).map(sqlite_value))
            .collect::<rusqlite::Result<Vec<_>>>()?;
        digest.add(&values);
        batch.push(values);
        if batch.len() == BATCH_ROWS {
            insert(tx, table, &full, &batch)?;
            batch.clear();
        }
    }
    if !batch.is_empty() {
        let last = tx
            .prepare(&insert_statement(table, batch.len()))
            .map_err(|e| pg(Step::Insert, Some(&table.name))(e.into()))?;
        insert(tx, table, &last, &batch)?;
    }
    Ok(digest.finish())
}

/// `INSERT INTO table (columns) VALUES ($1, …), (…)` for `rows` rows.
fn insert_statement(table: &Table, rows: usize) -> String {
    let width = table.columns.len();
    let list: Vec<String> = table.columns.iter().map(|c| quoted(&c.name)).collect();
    let values: Vec<String> = (0..rows)
        .map(|r| {
            let row: Vec<String> = (1..=width).map(|c| format!("${}", r * width + c)).collect();
            format!("({})", row.join(", "))
        })
        .collect();
    format!(
        "INSERT INTO {} ({}) VALUES {}",
        quoted(&table.name),
        list.join(", "),
        values.join(", ")
    )
}

fn insert(
    tx: &mut postgres::Transaction<'_>,
    table: &Table,
    statement: &postgres::Statement,
    batch: &[Vec<Value>],
) -> Result<(), CopyError> {
    let mut params = Vec::with_capacity(batch.len() * table.columns.len());
    for row in batch {
        for (value, column) in row.iter().zip(&table.columns) {
            params.push(match value {
                Value::Null => Param::Null,
                Value::Int(n) => Param::Int(*n),
                Value::Text(text) => Param::Text(text),
                Value::Bytes(bytes) => Param::Bytes(bytes),
                Value::Real(_) => {
                    return Err(CopyError::RealValue {
                        table: table.name.clone(),
                        column: column.name.clone(),
                    })
                }
            });
        }
    }
    tx.execute(statement, &pg_params(&params))
        .map_err(|e| pg(Step::Insert, Some(&table.name))(e.into()))?;
    Ok(())
}

/// `table` read back from PostgreSQL, streamed in key order: its row count and
/// digest, to compare with SQLite's.
fn postgres_digest(
    tx: &mut postgres::Transaction<'_>,
    table: &Table,
) -> Result<(u64, String), CopyError> {
    let fail = || pg(Step::Verify, Some(&table.name));
    let sql = select_in_key_order(table, Side::Postgres);
    let mut rows = tx
        .query_raw(&sql, Vec::<&(dyn postgres::types::ToSql + Sync)>::new())
        .map_err(|e| fail()(e.into()))?;
    let mut digest = RowDigest::new();
    while let Some(row) = rows.next().map_err(|e| fail()(e.into()))? {
        digest.add(&pg_values(&row).map_err(fail())?);
    }
    Ok(digest.finish())
}

/// Moves each identity column's sequence to the largest value copied, so the next
/// row PostgreSQL numbers itself (a support bundle, a forecast miss) does not
/// collide with a copied one.
fn move_identities(tx: &mut postgres::Transaction<'_>, table: &Table) -> Result<(), CopyError> {
    for column in table.columns.iter().filter(|c| c.identity) {
        let sql = format!(
            "SELECT setval(pg_get_serial_sequence($1, $2), m)
             FROM (SELECT max({}) AS m FROM {}) AS copied WHERE m IS NOT NULL",
            quoted(&column.name),
            quoted(&table.name)
        );
        tx.execute(&sql, &[&quoted(&table.name), &column.name])
            .map_err(|e| pg(Step::Identity, Some(&table.name))(e.into()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{RowDigest, Value};

    fn digest(rows: &[Vec<Value>]) -> (u64, String) {
        let mut digest = RowDigest::new();
        rows.iter().for_each(|row| digest.add(row));
        digest.finish()
    }

    #[test]
    fn rows_that_differ_only_in_where_values_end_or_their_kind_digest_apart() {
        let text = |s: &str| Value::Text(s.into());
        let pairs = [
            (vec![text("ab"), text("c")], vec![text("a"), text("bc")]),
            (vec![Value::Null], vec![text("")]),
            (vec![Value::Int(1)], vec![text("1")]),
            (vec![text("x")], vec![Value::Bytes(b"x".to_vec())]),
        ];
        for (one, other) in pairs {
            assert_ne!(
                digest(std::slice::from_ref(&one)),
                digest(std::slice::from_ref(&other)),
                "{one:?}"
            );
        }
        assert_eq!(
            digest(&[vec![text("a")], vec![text("b")]]),
            digest(&[vec![text("a")], vec![text("b")]])
        );
    }
}
