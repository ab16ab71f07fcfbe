//! Releases: a customer's whole environment as one version, recorded as their OCI
//! indexes arrive (`release_indexes`, with their stacks and services in apply
//! order). The tables are not called `releases`: that one, older, holds single
//! stack versions (bundles).

use rusqlite::{params, Connection, OptionalExtension, Row};

use super::{parsed, Text};
use crate::api::{DeployedRelease, ReleaseServicePart, ReleaseStackPart, ReleaseVersion};
use crate::timestamp::Timestamp;

/// A release version and its parts, as read from its description.
#[derive(Clone, Debug)]
pub struct NewReleaseIndex {
    pub release: ReleaseVersion,
    pub stacks: Vec<ReleaseStackPart>,
    pub services: Vec<ReleaseServicePart>,
}

/// Records a release version with its parts. A prerelease pushed again with another
/// index (a moved prerelease tag) replaces what was recorded; a stable version, as
/// its tag, never changes once recorded (the same version pushed to a second
/// namespace keeps its first record). False when nothing was recorded.
pub fn record(conn: &Connection, r: &NewReleaseIndex) -> rusqlite::Result<bool> {
    let (name, version) = (&r.release.name, r.release.version.to_string());
    let recorded: Option<(String, bool)> = conn
        .prepare_cached(
            "SELECT digest, prerelease FROM release_indexes WHERE name = ?1 AND version = ?2",
        )?
        .query_row(params![name, version], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?;
    if let Some((digest, prerelease)) = recorded {
        if digest == r.release.digest.to_string() || !prerelease {
            return Ok(false);
        }
    }
    conn.prepare_cached(
        "INSERT OR REPLACE INTO release_indexes
             (name, version, version_key, prerelease, repository, digest, published_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        name,
        version,
        crate::version_key::of(&r.release.version),
        r.release.prerelease,
        r.release.repository,
        Text(&r.release.digest),
        r.release.published_at,
    ])?;
    delete_parts(conn, name, &version)?;
    let mut stack = conn.prepare_cached(
        "INSERT INTO release_index_stacks (name, version, position, stack, stack_version, digest)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for (position, s) in r.stacks.iter().enumerate() {
        stack.execute(params![
            name,
            version,
            position as i64,
            s.stack,
            Text(&s.version),
            Text(&s.digest)
        ])?;
    }
    let mut service = conn.prepare_cached(
        "INSERT INTO release_index_services (name, version, position, service, reference, digest)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for (position, s) in r.services.iter().enumerate() {
        service.execute(params![
            name,
            version,
            position as i64,
            s.service,
            s.reference,
            Text(&s.digest)
        ])?;
    }
    Ok(true)
}

fn delete_parts(conn: &Connection, name: &str, version: &str) -> rusqlite::Result<()> {
    for table in ["release_index_stacks", "release_index_services"] {
        conn.prepare_cached(&format!(
            "DELETE FROM {table} WHERE name = ?1 AND version = ?2"
        ))?
        .execute(params![name, version])?;
    }
    Ok(())
}

/// Forgets the release versions whose index is the deleted manifest `digest` of
/// `repo`, with their parts.
pub fn delete_by_digest(conn: &Connection, repo: &str, digest: &str) -> rusqlite::Result<()> {
    let gone: Vec<(String, String)> = conn
        .prepare_cached(
            "SELECT name, version FROM release_indexes WHERE repository = ?1 AND digest = ?2",
        )?
        .query_map(params![repo, digest], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (name, version) in gone {
        delete_parts(conn, &name, &version)?;
        conn.prepare_cached("DELETE FROM release_indexes WHERE name = ?1 AND version = ?2")?
            .execute(params![name, version])?;
    }
    Ok(())
}

const VERSION_COLUMNS: &str = "name, version, repository, digest, prerelease, published_at";

fn version_row(r: &Row<'_>) -> rusqlite::Result<ReleaseVersion> {
    Ok(ReleaseVersion {
        name: r.get(0)?,
        version: parsed(r, 1)?,
        repository: r.get(2)?,
        digest: parsed(r, 3)?,
        prerelease: r.get(4)?,
        published_at: r.get::<_, Timestamp>(5)?,
    })
}

/// Every recorded version of every release (or of `name`), by name, newest first.
pub fn versions(conn: &Connection, name: Option<&str>) -> rusqlite::Result<Vec<ReleaseVersion>> {
    conn.prepare_cached(&format!(
        "SELECT {VERSION_COLUMNS} FROM release_indexes WHERE ?1 IS NULL OR name = ?1
         ORDER BY name, version_key DESC"
    ))?
    .query_map(params![name], version_row)?
    .collect()
}

/// One recorded release version.
pub fn version(
    conn: &Connection,
    name: &str,
    version: &str,
) -> rusqlite::Result<Option<ReleaseVersion>> {
    conn.prepare_cached(&format!(
        "SELECT {VERSION_COLUMNS} FROM release_indexes WHERE name = ?1 AND version = ?2"
    ))?
    .query_row(params![name, version], version_row)
    .optional()
}

/// The stacks a release version pins, in apply order.
pub fn stacks(
    conn: &Connection,
    name: &str,
    version: &str,
) -> rusqlite::Result<Vec<ReleaseStackPart>> {
    conn.prepare_cached(
        "SELECT stack, stack_version, digest FROM release_index_stacks
         WHERE name = ?1 AND version = ?2 ORDER BY position",
    )?
    .query_map(params![name, version], |r| {
        Ok(ReleaseStackPart {
            stack: r.get(0)?,
            version: parsed(r, 1)?,
            digest: parsed(r, 2)?,
        })
    })?
    .collect()
}

/// The services a release version pins, in the order it lists them.
pub fn services(
    conn: &Connection,
    name: &str,
    version: &str,
) -> rusqlite::Result<Vec<ReleaseServicePart>> {
    conn.prepare_cached(
        "SELECT service, reference, digest FROM release_index_services
         WHERE name = ?1 AND version = ?2 ORDER BY position",
    )?
    .query_map(params![name, version], |r| {
        Ok(ReleaseServicePart {
            service: r.get(0)?,
            reference: r.get(1)?,
            digest: parsed(r, 2)?,
        })
    })?
    .collect()
}

/// The customers that ever reported a deployment as part of release `name`, by id
/// (read through `receipts_release`).
pub fn customers_of(conn: &Connection, name: &str) -> rusqlite::Result<Vec<String>> {
    conn.prepare_cached(
        "SELECT DISTINCT customer FROM receipts WHERE release_name = ?1 ORDER BY customer",
    )?
    .query_map(params![name], |r| r.get(0))?
    .collect()
}

/// What one customer runs of one stack, with the release its deployment was part
/// of: one cell of the fleet, for comparing with a release.
#[derive(Clone, Debug)]
pub struct Cell {
    pub customer: String,
    pub environment: Option<String>,
    pub stack: String,
    /// `None` when nothing is in place (destroyed).
    pub version: Option<semver::Version>,
    pub digest: Option<stackpack_schema::Digest>,
    pub release: Option<DeployedRelease>,
    /// When the deployment in place finished (UTC nanoseconds).
    pub finished_ns: i64,
}

/// Every cell of `customer` with a deployment in place (or destroyed), by stack.
pub fn cells(conn: &Connection, customer: &str) -> rusqlite::Result<Vec<Cell>> {
    conn.prepare_cached(
        "SELECT f.customer, c.environment, f.stack, f.version, f.digest,
             r.release_name, r.release_version, r.release_digest, r.finished_ns
         FROM fleet_cells f JOIN receipts r ON r.id = f.current_id
         JOIN customers c ON c.id = f.customer
         WHERE f.customer = ?1 ORDER BY f.stack",
    )?
    .query_map(params![customer], |r| {
        Ok(Cell {
            customer: r.get(0)?,
            environment: r.get(1)?,
            stack: r.get(2)?,
            version: super::parsed_opt(r, 3)?,
            digest: super::parsed_opt(r, 4)?,
            release: match r.get::<_, Option<String>>(5)? {
                Some(name) => Some(DeployedRelease {
                    name,
                    version: parsed(r, 6)?,
                    digest: parsed(r, 7)?,
                }),
                None => None,
            },
            finished_ns: r.get(8)?,
        })
    })?
    .collect()
}
