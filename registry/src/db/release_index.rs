//! Releases: a customer's whole environment as one version, recorded as their OCI
//! indexes arrive (`release_indexes`, with their stacks and services in apply
//! order). The tables are not called `releases`: that one, older, holds single
//! stack versions (bundles).
//!
//! Written against [`Sql`], so the same functions run on SQLite and PostgreSQL
//! (PG5: the three tables, and `receipts`, which `customers_of` and `cells` read).

use super::locks::Lock;
use super::sql::{from_rows, Decode, FromRow, Row, Sql};
use crate::api::{DeployedRelease, ReleaseServicePart, ReleaseStackPart, ReleaseVersion};

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
pub fn record<C: Sql + ?Sized>(conn: &C, r: &NewReleaseIndex) -> Result<bool, C::Error> {
    let (name, version) = (r.release.name.as_str(), r.release.version.to_string());
    let digest = r.release.digest.to_string();
    let recorded = conn.query_opt(
        "SELECT digest, prerelease FROM release_indexes WHERE name = $1 AND version = $2",
        &[name.into(), version.as_str().into()],
    )?;
    if let Some(row) = recorded {
        let (was, prerelease): (String, bool) = (row.get("digest")?, row.get("prerelease")?);
        if was == digest || !prerelease {
            return Ok(false);
        }
    }
    let key = crate::version_key::of(&r.release.version);
    let published_at = r.release.published_at.to_string();
    conn.execute(
        "INSERT INTO release_indexes
             (name, version, version_key, prerelease, repository, digest, published_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (name, version) DO UPDATE SET version_key = excluded.version_key,
             prerelease = excluded.prerelease, repository = excluded.repository,
             digest = excluded.digest, published_at = excluded.published_at",
        &[
            name.into(),
            version.as_str().into(),
            key.as_slice().into(),
            r.release.prerelease.into(),
            r.release.repository.as_str().into(),
            digest.as_str().into(),
            published_at.as_str().into(),
        ],
    )?;
    delete_parts(conn, name, &version)?;
    for (position, s) in r.stacks.iter().enumerate() {
        let (stack_version, digest) = (s.version.to_string(), s.digest.to_string());
        conn.execute(
            "INSERT INTO release_index_stacks
                 (name, version, position, stack, stack_version, digest)
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                name.into(),
                version.as_str().into(),
                (position as i64).into(),
                s.stack.as_str().into(),
                stack_version.as_str().into(),
                digest.as_str().into(),
            ],
        )?;
    }
    for (position, s) in r.services.iter().enumerate() {
        let digest = s.digest.to_string();
        conn.execute(
            "INSERT INTO release_index_services
                 (name, version, position, service, reference, digest)
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                name.into(),
                version.as_str().into(),
                (position as i64).into(),
                s.service.as_str().into(),
                s.reference.as_str().into(),
                digest.as_str().into(),
            ],
        )?;
    }
    Ok(true)
}

fn delete_parts<C: Sql + ?Sized>(conn: &C, name: &str, version: &str) -> Result<(), C::Error> {
    for table in ["release_index_stacks", "release_index_services"] {
        conn.execute(
            &format!("DELETE FROM {table} WHERE name = $1 AND version = $2"),
            &[name.into(), version.into()],
        )?;
    }
    Ok(())
}

/// Forgets the release versions whose index is the deleted manifest `digest` of
/// `repo`, with their parts.
pub fn delete_by_digest<C: Sql + ?Sized>(
    conn: &C,
    repo: &str,
    digest: &str,
) -> Result<(), C::Error> {
    let rows = conn.query(
        "SELECT name, version FROM release_indexes WHERE repository = $1 AND digest = $2",
        &[repo.into(), digest.into()],
    )?;
    let mut gone: Vec<(String, String)> = Vec::with_capacity(rows.len());
    for row in &rows {
        gone.push((row.get("name")?, row.get("version")?));
    }
    // The caller holds `repo`, where these were pushed: hold the releases too.
    let held: Vec<Lock> = gone.iter().map(|(name, _)| Lock::Release(name)).collect();
    conn.lock_all(&held)?;
    for (name, version) in gone {
        delete_parts(conn, &name, &version)?;
        conn.execute(
            "DELETE FROM release_indexes WHERE name = $1 AND version = $2",
            &[name.as_str().into(), version.as_str().into()],
        )?;
    }
    Ok(())
}

const VERSION_COLUMNS: &str = "name, version, repository, digest, prerelease, published_at";

impl FromRow for ReleaseVersion {
    fn from_row(r: &Row) -> Result<Self, Decode> {
        Ok(ReleaseVersion {
            name: r.get("name")?,
            version: r.parsed("version")?,
            repository: r.get("repository")?,
            digest: r.parsed("digest")?,
            prerelease: r.get("prerelease")?,
            published_at: r.get("published_at")?,
        })
    }
}

/// Every recorded version of every release (or of `name`), by name, newest first.
pub fn versions<C: Sql + ?Sized>(
    conn: &C,
    name: Option<&str>,
) -> Result<Vec<ReleaseVersion>, C::Error> {
    // `CAST`: PostgreSQL fixes a parameter's type at its first use, and `IS NULL`
    // fixes none ("could not determine data type of parameter $1").
    let rows = conn.query(
        &format!(
            "SELECT {VERSION_COLUMNS} FROM release_indexes
             WHERE CAST($1 AS TEXT) IS NULL OR name = $1
             ORDER BY name, version_key DESC"
        ),
        &[name.into()],
    )?;
    Ok(from_rows(&rows)?)
}

/// One recorded release version.
pub fn version<C: Sql + ?Sized>(
    conn: &C,
    name: &str,
    version: &str,
) -> Result<Option<ReleaseVersion>, C::Error> {
    let row = conn.query_opt(
        &format!("SELECT {VERSION_COLUMNS} FROM release_indexes WHERE name = $1 AND version = $2"),
        &[name.into(), version.into()],
    )?;
    Ok(row.as_ref().map(ReleaseVersion::from_row).transpose()?)
}

/// The stacks a release version pins, in apply order.
pub fn stacks<C: Sql + ?Sized>(
    conn: &C,
    name: &str,
    version: &str,
) -> Result<Vec<ReleaseStackPart>, C::Error> {
    let rows = conn.query(
        "SELECT stack, stack_version, digest FROM release_index_stacks
         WHERE name = $1 AND version = $2 ORDER BY position",
        &[name.into(), version.into()],
    )?;
    let part = |r: &Row| {
        Ok::<_, Decode>(ReleaseStackPart {
            stack: r.get("stack")?,
            version: r.parsed("stack_version")?,
            digest: r.parsed("digest")?,
        })
    };
    Ok(rows.iter().map(part).collect::<Result<_, _>>()?)
}

/// The services a release version pins, in the order it lists them.
pub fn services<C: Sql + ?Sized>(
    conn: &C,
    name: &str,
    version: &str,
) -> Result<Vec<ReleaseServicePart>, C::Error> {
    let rows = conn.query(
        "SELECT service, reference, digest FROM release_index_services
         WHERE name = $1 AND version = $2 ORDER BY position",
        &[name.into(), version.into()],
    )?;
    let part = |r: &Row| {
        Ok::<_, Decode>(ReleaseServicePart {
            service: r.get("service")?,
            reference: r.get("reference")?,
            digest: r.parsed("digest")?,
        })
    };
    Ok(rows.iter().map(part).collect::<Result<_, _>>()?)
}

/// The customers that ever reported a deployment as part of release `name`, by id
/// (read through `receipts_release`).
pub fn customers_of<C: Sql + ?Sized>(conn: &C, name: &str) -> Result<Vec<String>, C::Error> {
    let rows = conn.query(
        "SELECT DISTINCT customer FROM receipts WHERE release_name = $1 ORDER BY customer",
        &[name.into()],
    )?;
    Ok(rows
        .iter()
        .map(|r| r.get("customer"))
        .collect::<Result<_, _>>()?)
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
pub fn cells<C: Sql + ?Sized>(conn: &C, customer: &str) -> Result<Vec<Cell>, C::Error> {
    let rows = conn.query(
        "SELECT f.customer, c.environment, f.stack, f.version, f.digest,
             r.release_name, r.release_version, r.release_digest, r.finished_ns
         FROM fleet_cells f JOIN receipts r ON r.id = f.current_id
         JOIN customers c ON c.id = f.customer
         WHERE f.customer = $1 ORDER BY f.stack",
        &[customer.into()],
    )?;
    let cell = |r: &Row| {
        Ok::<_, Decode>(Cell {
            customer: r.get("customer")?,
            environment: r.get("environment")?,
            stack: r.get("stack")?,
            version: r.parsed_opt("version")?,
            digest: r.parsed_opt("digest")?,
            release: match r.get::<Option<String>>("release_name")? {
                Some(name) => Some(DeployedRelease {
                    name,
                    version: r.parsed("release_version")?,
                    digest: r.parsed("release_digest")?,
                }),
                None => None,
            },
            finished_ns: r.get("finished_ns")?,
        })
    };
    Ok(rows.iter().map(cell).collect::<Result<_, _>>()?)
}
