//! The registry's schema as migration files, one folder per dialect
//! (`registry/migrations/sqlite/`, `registry/migrations/postgres/`), compiled in
//! and applied in order by [`super::migrate_file`] (SQLite, the version in
//! `PRAGMA user_version`) and [`super::pg::migrate`] (PostgreSQL, the version in
//! `schema_version`). Each dialect is numbered on its own: SQLite's steps are the
//! history of every embedded registry since the first release (a few fill new
//! columns from existing rows in Rust, `fill_after` in `db/mod.rs`), PostgreSQL's
//! start at the shape SQLite had when the production layout came.
//!
//! Why files and not a migration crate: `refinery` (the well-kept one for
//! `rusqlite` and `postgres`) keeps its own history table, so every existing
//! registry's `user_version` and `schema_version` would need translating; it has
//! no place for SQLite's Rust back-fills, which must run in the step's own
//! transaction; and its PostgreSQL runner takes no lock, where two replicas
//! started at once must not both migrate ([`super::pg::MIGRATION_LOCK`]). What is
//! left to a runner is a loop of a dozen lines per dialect, tested in
//! `tests/it/schema_equivalence.rs` and `tests/it/migrate.rs`.
//!
//! A test below checks that every file in each folder is listed here, once, in
//! order, numbered from 1 without gaps: a new file that is not listed fails it.

/// One migration: the schema version it brings a database to, and its SQL.
#[derive(Clone, Copy, Debug)]
pub struct Step {
    pub version: u32,
    /// The file's name without `.sql` (`0009_rollouts`).
    pub name: &'static str,
    pub sql: &'static str,
}

macro_rules! step {
    ($version:literal, $dialect:literal, $name:literal) => {
        Step {
            version: $version,
            name: $name,
            sql: include_str!(concat!("../../migrations/", $dialect, "/", $name, ".sql")),
        }
    };
}

/// SQLite's steps: a database at `user_version` N has had the first N.
pub const SQLITE: &[Step] = &[
    step!(1, "sqlite", "0001_initial"),
    step!(2, "sqlite", "0002_receipt_times_upload_tokens"),
    step!(3, "sqlite", "0003_token_expiry_environments"),
    step!(4, "sqlite", "0004_release_modules_fleet_cells"),
    step!(5, "sqlite", "0005_fleet_cell_rows"),
    step!(6, "sqlite", "0006_adoption_deltas"),
    step!(7, "sqlite", "0007_releases"),
    step!(8, "sqlite", "0008_key_origin_registered_customers"),
    step!(9, "sqlite", "0009_rollouts"),
    step!(10, "sqlite", "0010_forecasts"),
    step!(11, "sqlite", "0011_token_names"),
    step!(12, "sqlite", "0012_support_alerts"),
    step!(13, "sqlite", "0013_support_bundles"),
    step!(14, "sqlite", "0014_upload_segments"),
    step!(15, "sqlite", "0015_replica_claims_leases"),
    step!(16, "sqlite", "0016_kept_counts"),
    step!(17, "sqlite", "0017_registry_settings"),
    step!(18, "sqlite", "0018_plan_is_attempt"),
];

/// PostgreSQL's steps: a database whose `schema_version` is N has had the first N.
pub const POSTGRES: &[Step] = &[
    step!(1, "postgres", "0001_tokens"),
    step!(2, "postgres", "0002_sessions_leases"),
    step!(3, "postgres", "0003_manifests_blobs_uploads"),
    step!(4, "postgres", "0004_customers"),
    step!(5, "postgres", "0005_releases"),
    step!(6, "postgres", "0006_forecasts_alerts"),
    step!(7, "postgres", "0007_ledger"),
    step!(8, "postgres", "0008_rollouts"),
    step!(9, "postgres", "0009_plan_is_attempt"),
];

#[cfg(test)]
mod tests {
    use super::{Step, POSTGRES, SQLITE};

    fn files(dialect: &str) -> Vec<String> {
        let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("migrations")
            .join(dialect);
        let mut names: Vec<String> = std::fs::read_dir(&folder)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn assert_listed(dialect: &str, steps: &[Step]) {
        let listed: Vec<String> = steps.iter().map(|s| format!("{}.sql", s.name)).collect();
        assert_eq!(
            files(dialect),
            listed,
            "every file in registry/migrations/{dialect}/ is listed in db/migrations.rs, in order"
        );
        for (index, step) in steps.iter().enumerate() {
            assert_eq!(
                step.version as usize,
                index + 1,
                "{} is numbered in order",
                step.name
            );
            assert!(
                step.name.starts_with(&format!("{:04}_", step.version)),
                "{}'s name starts with its version",
                step.name
            );
        }
    }

    #[test]
    fn every_migration_file_is_listed_once_in_order() {
        assert_listed("sqlite", SQLITE);
        assert_listed("postgres", POSTGRES);
    }
}
