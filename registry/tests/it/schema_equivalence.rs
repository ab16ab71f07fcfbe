//! The two dialects' migrations (`registry/migrations/sqlite/`, `…/postgres/`)
//! make the same schema (issue 42): the same tables, columns with mapped types and
//! nullability, primary keys, unique constraints, named indexes (with their
//! columns, uniqueness and whether they are partial) and foreign keys. Each dialect
//! is migrated from empty and from every earlier version of its own, and every
//! path ends at the same schema. Read from the databases' own catalogs
//! (`pragma_*` on SQLite, `pg_catalog` on PostgreSQL), not from the SQL text.

use std::collections::{BTreeMap, BTreeSet};

use stackpack_registry::db::{migrate_file, migrations, pg};
use stackpack_test_support::servers::Postgres;

/// One table as both dialects can state it.
#[derive(Debug, Default, PartialEq, Eq)]
struct Table {
    /// Name, mapped type, `NOT NULL`; by name (a column `ALTER TABLE` added comes
    /// last on SQLite and may sit elsewhere in PostgreSQL's step: rows are read by
    /// name, so the order is not part of the schema).
    columns: BTreeSet<(String, &'static str, bool)>,
    primary_key: Vec<String>,
    /// Unique constraints and unique indexes without a name of ours: columns only
    /// (SQLite calls them `sqlite_autoindex_…`, PostgreSQL `…_key`).
    unique: BTreeSet<Vec<String>>,
    /// Indexes made by `CREATE INDEX`: name → (columns, unique, partial).
    indexes: BTreeMap<String, (Vec<String>, bool, bool)>,
    /// (columns, referenced table, referenced columns).
    foreign_keys: BTreeSet<(Vec<String>, String, Vec<String>)>,
}

type Schema = BTreeMap<String, Table>;

/// A declared type as the kind of value it holds, the same word on both sides.
fn mapped(declared: &str) -> &'static str {
    match declared.to_ascii_lowercase().as_str() {
        "integer" | "bigint" | "int" | "int8" | "boolean" | "bool" => "integer",
        "text" | "character varying" | "varchar" => "text",
        "blob" | "bytea" => "bytes",
        "real" | "double precision" | "float8" => "real",
        _ => "other",
    }
}

fn sqlite_schema(path: &std::path::Path) -> Schema {
    let conn = rusqlite::Connection::open(path).unwrap();
    let tables: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
             ORDER BY name",
        )
        .unwrap()
        .query_map([], |r| r.get("name"))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    tables
        .into_iter()
        .map(|name| {
            let table = sqlite_table(&conn, &name);
            (name, table)
        })
        .collect()
}

fn sqlite_table(conn: &rusqlite::Connection, name: &str) -> Table {
    let mut table = Table::default();
    let mut pk: Vec<(i64, String)> = Vec::new();
    let mut columns = conn
        .prepare("SELECT name, type, \"notnull\", pk FROM pragma_table_info(?1) ORDER BY cid")
        .unwrap();
    let mut rows = columns.query([name]).unwrap();
    while let Some(row) = rows.next().unwrap() {
        let column: String = row.get("name").unwrap();
        let declared: String = row.get("type").unwrap();
        let position: i64 = row.get("pk").unwrap();
        let not_null: bool = row.get("notnull").unwrap();
        // A primary key column is never NULL on PostgreSQL; SQLite's `pragma`
        // reports it nullable unless the column says so.
        table
            .columns
            .insert((column.clone(), mapped(&declared), not_null || position > 0));
        if position > 0 {
            pk.push((position, column));
        }
    }
    pk.sort();
    table.primary_key = pk.into_iter().map(|(_, c)| c).collect();
    let mut list = conn
        .prepare("SELECT name, \"unique\", origin, partial FROM pragma_index_list(?1)")
        .unwrap();
    let indexes: Vec<(String, bool, String, bool)> = list
        .query_map([name], |r| {
            Ok((
                r.get("name")?,
                r.get("unique")?,
                r.get("origin")?,
                r.get("partial")?,
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (index, unique, origin, partial) in indexes {
        let columns: Vec<String> = conn
            .prepare("SELECT name FROM pragma_index_info(?1) ORDER BY seqno")
            .unwrap()
            .query_map([&index], |r| r.get("name"))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        match origin.as_str() {
            "pk" => {}
            "u" => {
                table.unique.insert(columns);
            }
            _ => {
                table.indexes.insert(index, (columns, unique, partial));
            }
        }
    }
    let mut keys: BTreeMap<i64, (Vec<String>, String, Vec<String>)> = BTreeMap::new();
    let mut list = conn
        .prepare("SELECT id, \"table\", \"from\", \"to\" FROM pragma_foreign_key_list(?1) ORDER BY id, seq")
        .unwrap();
    let mut rows = list.query([name]).unwrap();
    while let Some(row) = rows.next().unwrap() {
        let id: i64 = row.get("id").unwrap();
        let entry = keys
            .entry(id)
            .or_insert_with(|| (Vec::new(), row.get("table").unwrap(), Vec::new()));
        entry.0.push(row.get("from").unwrap());
        // `REFERENCES t` without columns names the primary key: PostgreSQL's
        // catalog says which, so the referenced table's key is filled in below.
        if let Some(to) = row.get::<_, Option<String>>("to").unwrap() {
            entry.2.push(to);
        }
    }
    table.foreign_keys = keys.into_values().collect();
    table
}

/// Foreign keys that name no columns (`REFERENCES blobs`) reference the primary key.
fn resolve_foreign_keys(schema: &mut Schema) {
    let keys: BTreeMap<String, Vec<String>> = schema
        .iter()
        .map(|(name, table)| (name.clone(), table.primary_key.clone()))
        .collect();
    for table in schema.values_mut() {
        table.foreign_keys = std::mem::take(&mut table.foreign_keys)
            .into_iter()
            .map(|(from, to_table, to)| {
                let to = if to.is_empty() {
                    keys.get(&to_table).cloned().unwrap_or_default()
                } else {
                    to
                };
                (from, to_table, to)
            })
            .collect();
    }
}

fn postgres_schema(client: &mut postgres::Client) -> Schema {
    let mut schema = Schema::new();
    for row in client
        .query(
            "SELECT c.table_name::text AS table_name, c.column_name::text AS column_name,
                    c.data_type::text AS data_type, c.is_nullable = 'NO' AS not_null
             FROM information_schema.columns c
             JOIN information_schema.tables t
               ON t.table_name = c.table_name AND t.table_schema = c.table_schema
             WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
               AND c.table_name <> 'schema_version'
             ORDER BY c.table_name, c.ordinal_position",
            &[],
        )
        .unwrap()
    {
        let table: String = row.get("table_name");
        let data_type: String = row.get("data_type");
        schema.entry(table).or_default().columns.insert((
            row.get("column_name"),
            mapped(&data_type),
            row.get("not_null"),
        ));
    }
    for row in client
        .query(
            "SELECT t.relname::text AS table_name, i.relname::text AS index_name,
                    ix.indisunique AS is_unique, ix.indisprimary AS is_primary,
                    ix.indpred IS NOT NULL AS partial,
                    EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = ix.indexrelid)
                        AS is_constraint,
                    ARRAY(SELECT a.attname::text
                          FROM unnest(ix.indkey) WITH ORDINALITY AS k(attnum, ord)
                          JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
                          ORDER BY k.ord) AS columns
             FROM pg_index ix
             JOIN pg_class i ON i.oid = ix.indexrelid
             JOIN pg_class t ON t.oid = ix.indrelid
             JOIN pg_namespace n ON n.oid = t.relnamespace
             WHERE n.nspname = current_schema() AND t.relname <> 'schema_version'",
            &[],
        )
        .unwrap()
    {
        let table = schema.entry(row.get("table_name")).or_default();
        let columns: Vec<String> = row.get("columns");
        if row.get("is_primary") {
            table.primary_key = columns;
        } else if row.get("is_constraint") {
            table.unique.insert(columns);
        } else {
            table.indexes.insert(
                row.get("index_name"),
                (columns, row.get("is_unique"), row.get("partial")),
            );
        }
    }
    for row in client
        .query(
            "SELECT c.conrelid::regclass::text AS table_name,
                    c.confrelid::regclass::text AS referenced,
                    ARRAY(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY k(n, o)
                          JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n
                          ORDER BY k.o) AS from_columns,
                    ARRAY(SELECT a.attname::text FROM unnest(c.confkey) WITH ORDINALITY k(n, o)
                          JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n
                          ORDER BY k.o) AS to_columns
             FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
             WHERE c.contype = 'f' AND n.nspname = current_schema()",
            &[],
        )
        .unwrap()
    {
        let table = schema.entry(row.get("table_name")).or_default();
        table.foreign_keys.insert((
            row.get("from_columns"),
            row.get("referenced"),
            row.get("to_columns"),
        ));
    }
    schema
}

/// A SQLite database migrated to `version` with the first steps' files, then by
/// the registry's own migration to the newest.
fn sqlite_from(version: usize, dir: &std::path::Path) -> Schema {
    let path = dir.join(format!("from-{version}.db"));
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        for step in &migrations::SQLITE[..version] {
            conn.execute_batch(step.sql).unwrap();
        }
        conn.pragma_update(None, "user_version", version as i64)
            .unwrap();
    }
    let found = migrate_file(&path).unwrap();
    assert_eq!(
        found as usize, version,
        "the migration started where it was"
    );
    let mut schema = sqlite_schema(&path);
    resolve_foreign_keys(&mut schema);
    schema
}

/// A PostgreSQL database migrated to `version` with the first steps' files, then
/// by the registry's own migration to the newest.
fn postgres_from(version: usize, server: &Postgres) -> Schema {
    let database = format!("from_{version}");
    let mut admin = pg::connect(&server.url()).unwrap();
    admin
        .batch_execute(&format!("CREATE DATABASE {database}"))
        .unwrap();
    let url = server.url().replace("/postgres", &format!("/{database}"));
    let mut client = pg::connect(&url).unwrap();
    if version > 0 {
        let mut tx = client.transaction().unwrap();
        for step in &migrations::POSTGRES[..version] {
            tx.batch_execute(step.sql).unwrap();
        }
        tx.batch_execute(&format!(
            "CREATE TABLE schema_version (version BIGINT NOT NULL);
             INSERT INTO schema_version VALUES ({version});"
        ))
        .unwrap();
        tx.commit().unwrap();
    }
    let found = pg::migrate(&mut client).unwrap();
    assert_eq!(
        found as usize, version,
        "the migration started where it was"
    );
    postgres_schema(&mut client)
}

/// What differs between two schemas, table by table, as lines to read.
fn differences(left: &Schema, right: &Schema) -> Vec<String> {
    let names: BTreeSet<&String> = left.keys().chain(right.keys()).collect();
    let mut out = Vec::new();
    for name in names {
        match (left.get(name), right.get(name)) {
            (Some(a), Some(b)) if a != b => out.push(format!("{name}:\n  {a:?}\n  {b:?}")),
            (Some(_), None) => out.push(format!("{name}: only on the left")),
            (None, Some(_)) => out.push(format!("{name}: only on the right")),
            _ => {}
        }
    }
    out
}

#[test]
fn both_dialects_migrate_from_empty_and_every_earlier_version_to_one_schema() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = sqlite_from(0, dir.path());
    for version in 1..migrations::SQLITE.len() {
        let upgraded = sqlite_from(version, dir.path());
        assert!(
            upgraded == sqlite,
            "SQLite from version {version}:\n{}",
            differences(&upgraded, &sqlite).join("\n")
        );
    }

    let server = Postgres::start();
    let postgres = postgres_from(0, &server);
    for version in 1..migrations::POSTGRES.len() {
        let upgraded = postgres_from(version, &server);
        assert!(
            upgraded == postgres,
            "PostgreSQL from version {version}:\n{}",
            differences(&upgraded, &postgres).join("\n")
        );
    }

    for (dialect, schema) in [("SQLite", &sqlite), ("PostgreSQL", &postgres)] {
        let unmapped: Vec<String> = schema
            .iter()
            .flat_map(|(table, t)| t.columns.iter().map(move |c| (table, c)))
            .filter(|(_, (_, kind, _))| *kind == "other")
            .map(|(table, (column, _, _))| format!("{table}.{column}"))
            .collect();
        assert!(
            unmapped.is_empty(),
            "{dialect} columns of a type the map does not know: {unmapped:?}"
        );
    }
    assert!(
        sqlite.len() > 30,
        "the schema was read: {:?}",
        sqlite.keys()
    );

    let differ = differences(&sqlite, &postgres);
    assert!(
        differ.is_empty(),
        "SQLite (left) and PostgreSQL (right) schemas differ:\n{}",
        differ.join("\n")
    );
}
