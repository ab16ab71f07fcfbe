//! The local ledger: every signed receipt, whether the registry acknowledged it, and
//! the deployments (which version of which stack runs here, with which inputs).

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use rusqlite::{params, Connection, OptionalExtension};
use semver::Version;
use stackpack_schema::receipt::{ReceiptKind, SignedReceipt};

use crate::error::Error;
use crate::release::receipt::SignedReleaseReceipt;

/// What can go wrong in the ledger. Kept apart from the shared [`Error`] so that the
/// bundle library, which the packager also compiles, knows nothing about SQLite.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("the runner's ledger failed: {0}")]
    Database(#[from] rusqlite::Error),
    #[error("cannot open the ledger `{path}`: {source}")]
    Open {
        path: std::path::PathBuf,
        source: rusqlite::Error,
    },
    #[error("the ledger holds a bad {what}: {detail}")]
    Corrupt { what: &'static str, detail: String },
    #[error("the ledger `{path}` was written by a newer stackpack-runner (its schema is version {found}; this runner knows versions up to {known})")]
    Newer {
        path: std::path::PathBuf,
        found: i64,
        known: i64,
    },
}

impl From<LedgerError> for Error {
    fn from(e: LedgerError) -> Self {
        let hint = matches!(e, LedgerError::Newer { .. }).then_some(
            "run the stackpack-runner that wrote it, or a newer one; this home's receipts are kept as they are",
        );
        let error = Error::refused_by(e);
        match hint {
            Some(hint) => error.hint(hint),
            None => error,
        }
    }
}

type Result<T, E = LedgerError> = std::result::Result<T, E>;

/// One connection to the ledger, shared by the stacks a release runs at once: each
/// call holds it for its own statements only.
pub struct Ledger {
    conn: Mutex<Connection>,
}

/// One deployment: a successful apply, rollback or destroy.
#[derive(Clone, Debug)]
pub struct Deployment {
    /// Apply, rollback or destroy.
    pub kind: ReceiptKind,
    pub stack: String,
    pub version: Version,
    pub digest: String,
    pub receipt_id: String,
    pub inputs_file: String,
    pub applied_at: String,
}

/// A run the engine started: recorded before the engine runs, removed when its
/// receipt is. One left behind by a process that is gone was interrupted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StartedRun {
    pub id: String,
    pub stack: String,
    pub version: String,
    pub kind: ReceiptKind,
    pub started_at: String,
    pub pid: u32,
    pub work: String,
}

/// A stored receipt with its report status.
#[derive(Clone, Debug)]
pub struct StoredReceipt {
    pub signed: SignedReceipt,
    pub reported_at: Option<String>,
}

/// One migration file of the ledger: its name without `.sql`, and its SQL.
macro_rules! migration {
    ($name:literal) => {
        (
            $name,
            include_str!(concat!("../migrations/ledger/", $name, ".sql")),
        )
    };
}

/// The ledger's schema, one file per version in `customer-bundle/migrations/ledger/`:
/// a ledger at `PRAGMA user_version` N has had the first N steps, and opening it
/// runs the missing ones in one transaction. Ledgers made before versions were
/// kept are at 0 and hold the tables of step 1 already (hence `IF NOT EXISTS`).
/// Add a file (and its line here) for any change; never edit one that shipped.
const MIGRATIONS: &[(&str, &str)] = &[
    migration!("0001_initial"),
    migration!("0002_release_receipts"),
    migration!("0003_release_receipts_reported"),
];

/// What a run found beside its receipt: policy denials and warnings, failed smoke
/// checks. (The receipt format is shared with the registry and stays as it is; the
/// notes are kept here, by receipt id.)
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    /// `policy-deny`, `policy-warn`, `smoke-failed`, or `interrupted` (the run was
    /// stopped by a signal; `rule` names it).
    pub kind: String,
    pub rule: String,
    pub address: Option<String>,
    pub message: String,
}

/// The kind of [`Note`] a run stopped by a signal leaves on its `failed` receipt.
pub const INTERRUPTED_NOTE: &str = "interrupted";

/// Brings the ledger to the newest schema this runner knows, or refuses one from a
/// newer runner (whose tables this one might misread or damage).
fn migrate(conn: &mut Connection, path: &Path) -> Result<()> {
    let known = MIGRATIONS.len() as i64;
    let found: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    if found > known {
        return Err(LedgerError::Newer {
            path: path.to_path_buf(),
            found,
            known,
        });
    }
    if found == known {
        return Ok(());
    }
    // Under the write lock, reading the version again: two runners opening the same
    // home at once must not both run a step.
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let at: i64 = tx.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    for (_, sql) in MIGRATIONS.iter().skip(at.max(0) as usize) {
        tx.execute_batch(sql)?;
    }
    tx.pragma_update(None, "user_version", known)?;
    tx.commit()?;
    Ok(())
}

impl Ledger {
    pub fn open(path: &Path) -> Result<Ledger> {
        let mut conn = Connection::open(path).map_err(|source| LedgerError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        conn.busy_timeout(std::time::Duration::from_secs(30))?;
        // Versions first: a newer runner's ledger is refused before anything is
        // written to it, the journal mode included.
        migrate(&mut conn, path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        Ok(Ledger {
            conn: Mutex::new(conn),
        })
    }

    /// The connection, for one call's statements (never held across another call).
    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic mid-statement leaves nothing half-done that SQLite would not undo.
        self.conn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn add_receipt(&self, signed: &SignedReceipt) -> Result<()> {
        let r = &signed.receipt;
        self.conn().execute(
            "INSERT INTO receipts (id, stack, version, kind, outcome, finished_at, document)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                r.id,
                r.stack,
                r.version.to_string(),
                r.kind.as_str(),
                r.outcome.as_str(),
                r.finished_at,
                String::from_utf8(signed.to_bytes()).expect("JSON is UTF-8"),
            ],
        )?;
        Ok(())
    }

    pub fn start_run(&self, run: &StartedRun) -> Result<()> {
        self.conn().execute(
            "INSERT OR REPLACE INTO runs (id, stack, version, kind, started_at, pid, work)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                run.id,
                run.stack,
                run.version,
                run.kind.as_str(),
                run.started_at,
                run.pid,
                run.work
            ],
        )?;
        Ok(())
    }

    /// Ends the run `id`, and forgets the interrupted runs of the same stack: a run
    /// that recorded its ending has looked at the stack since.
    pub fn finish_run(&self, id: &str, stack: &str) -> Result<()> {
        self.conn()
            .execute("DELETE FROM runs WHERE id = ?1", params![id])?;
        for run in self.interrupted_runs()? {
            if run.stack == stack {
                self.conn()
                    .execute("DELETE FROM runs WHERE id = ?1", params![run.id])?;
            }
        }
        Ok(())
    }

    /// Runs that started and never recorded an ending, whose process is gone.
    pub fn interrupted_runs(&self) -> Result<Vec<StartedRun>> {
        let conn = self.conn();
        let mut statement = conn.prepare(
            "SELECT id, stack, version, kind, started_at, pid, work FROM runs ORDER BY started_at",
        )?;
        let rows = statement.query_map([], |row| {
            Ok(StartedRun {
                id: row.get(0)?,
                stack: row.get(1)?,
                version: row.get(2)?,
                kind: row.get::<_, String>(3)?.parse().map_err(|e: String| {
                    rusqlite::Error::FromSqlConversionFailure(
                        3,
                        rusqlite::types::Type::Text,
                        e.into(),
                    )
                })?,
                started_at: row.get(4)?,
                pid: row.get(5)?,
                work: row.get(6)?,
            })
        })?;
        let mut gone = Vec::new();
        for run in rows {
            let run = run?;
            if !process_alive(run.pid) {
                gone.push(run);
            }
        }
        Ok(gone)
    }

    pub fn add_deployment(&self, deployment: &Deployment) -> Result<()> {
        self.conn().execute(
            "INSERT INTO deployments (kind, stack, version, digest, receipt_id, inputs_file, applied_at)
             VALUES (?7, ?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                deployment.stack,
                deployment.version.to_string(),
                deployment.digest,
                deployment.receipt_id,
                deployment.inputs_file,
                deployment.applied_at,
                deployment.kind.as_str(),
            ],
        )?;
        Ok(())
    }

    fn deployments_where(
        &self,
        filter: &str,
        args: &[&dyn rusqlite::ToSql],
    ) -> Result<Vec<Deployment>> {
        let conn = self.conn();
        let mut statement = conn.prepare(&format!(
            "SELECT stack, version, digest, receipt_id, inputs_file, applied_at, kind
             FROM deployments {filter} ORDER BY seq DESC"
        ))?;
        let rows = statement.query_map(args, |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, String>(4)?,
                row.get::<_, String>(5)?,
                row.get::<_, String>(6)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (stack, version, digest, receipt_id, inputs_file, applied_at, kind) = row?;
            let version = Version::parse(&version).map_err(|_| LedgerError::Corrupt {
                what: "version",
                detail: format!("`{version}`"),
            })?;
            let kind = kind
                .parse::<ReceiptKind>()
                .map_err(|detail| LedgerError::Corrupt {
                    what: "deployment kind",
                    detail,
                })?;
            out.push(Deployment {
                kind,
                stack,
                version,
                digest,
                receipt_id,
                inputs_file,
                applied_at,
            });
        }
        Ok(out)
    }

    /// Deployments of `stack`, newest first.
    pub fn history(&self, stack: &str) -> Result<Vec<Deployment>> {
        self.deployments_where("WHERE stack = ?1", &[&stack])
    }

    /// Where `rollback` goes: the deployment below the current one once every earlier
    /// rollback is taken into account. An apply puts a version on top (replacing the
    /// top when it is the same version); a rollback takes the top off. So rolling back
    /// twice after two upgrades goes back two versions, not back and forth.
    pub fn rollback_target(&self, stack: &str) -> Result<Option<Deployment>> {
        let mut history = self.history(stack)?;
        history.reverse();
        let mut applied: Vec<Deployment> = Vec::new();
        for deployment in history {
            if deployment.kind == ReceiptKind::Destroy {
                // Nothing of what ran before a destroy is there to go back to.
                applied.clear();
                continue;
            }
            if deployment.kind == ReceiptKind::Rollback {
                while applied
                    .last()
                    .is_some_and(|top| top.version != deployment.version)
                {
                    applied.pop();
                }
                if applied.is_empty() {
                    applied.push(deployment);
                }
            } else if applied
                .last()
                .is_some_and(|top| top.version == deployment.version)
            {
                *applied.last_mut().expect("not empty") = deployment;
            } else {
                applied.push(deployment);
            }
        }
        applied.pop();
        Ok(applied.pop())
    }

    /// What runs now: the newest deployment of `stack`, unless that destroyed it.
    pub fn current(&self, stack: &str) -> Result<Option<Deployment>> {
        Ok(self
            .history(stack)?
            .into_iter()
            .next()
            .filter(|d| d.kind != ReceiptKind::Destroy))
    }

    /// Since when the current version runs: the oldest deployment in the unbroken
    /// run of the current version at the top of the history.
    pub fn since(&self, stack: &str) -> Result<Option<String>> {
        let history = self.history(stack)?;
        let Some(current) = history.first() else {
            return Ok(None);
        };
        Ok(history
            .iter()
            .take_while(|d| d.version == current.version)
            .last()
            .map(|d| d.applied_at.clone()))
    }

    /// The newest deployment of each stack.
    pub fn current_all(&self) -> Result<Vec<Deployment>> {
        let mut seen = std::collections::BTreeMap::new();
        for deployment in self.deployments_where("", &[])? {
            seen.entry(deployment.stack.clone()).or_insert(deployment);
        }
        Ok(seen
            .into_values()
            .filter(|d| d.kind != ReceiptKind::Destroy)
            .collect())
    }

    pub fn add_release_receipt(&self, signed: &SignedReleaseReceipt) -> Result<()> {
        let r = &signed.receipt;
        self.conn().execute(
            "INSERT INTO release_receipts (id, release, version, kind, outcome, finished_at, document)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                r.id,
                r.release,
                r.version.to_string(),
                r.kind.as_str(),
                r.outcome.to_string(),
                r.finished_at,
                serde_json::to_string(signed).expect("a receipt serialises"),
            ],
        )?;
        Ok(())
    }

    /// The release receipts of `release` (every release when `None`), newest first.
    pub fn release_receipts(&self, release: Option<&str>) -> Result<Vec<SignedReleaseReceipt>> {
        let conn = self.conn();
        let mut statement = conn.prepare(
            "SELECT document FROM release_receipts WHERE ?1 IS NULL OR release = ?1 ORDER BY seq DESC",
        )?;
        let rows = statement.query_map(params![release], |row| row.get::<_, String>(0))?;
        let mut out = Vec::new();
        for row in rows {
            let text = row?;
            out.push(
                serde_json::from_str(&text).map_err(|e| LedgerError::Corrupt {
                    what: "release receipt",
                    detail: e.to_string(),
                })?,
            );
        }
        Ok(out)
    }

    /// Release receipts the registry has not acknowledged, oldest first.
    pub fn unreported_release_receipts(&self) -> Result<Vec<SignedReleaseReceipt>> {
        let conn = self.conn();
        let mut statement = conn.prepare(
            "SELECT document FROM release_receipts WHERE reported_at IS NULL ORDER BY seq",
        )?;
        let rows = statement.query_map([], |row| row.get::<_, String>(0))?;
        let mut out = Vec::new();
        for row in rows {
            out.push(
                serde_json::from_str(&row?).map_err(|e| LedgerError::Corrupt {
                    what: "release receipt",
                    detail: e.to_string(),
                })?,
            );
        }
        Ok(out)
    }

    pub fn mark_release_reported(&self, id: &str, at: &str) -> Result<()> {
        self.conn().execute(
            "UPDATE release_receipts SET reported_at = ?2 WHERE id = ?1 AND reported_at IS NULL",
            params![id, at],
        )?;
        Ok(())
    }

    pub fn add_notes(&self, receipt_id: &str, notes: &[Note]) -> Result<()> {
        for note in notes {
            self.conn().execute(
                "INSERT INTO notes (receipt_id, kind, rule, address, message) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![receipt_id, note.kind, note.rule, note.address, note.message],
            )?;
        }
        Ok(())
    }

    pub fn notes(&self, receipt_id: &str) -> Result<Vec<Note>> {
        let conn = self.conn();
        let mut statement = conn.prepare(
            "SELECT kind, rule, address, message FROM notes WHERE receipt_id = ?1 ORDER BY rowid",
        )?;
        let rows = statement.query_map(params![receipt_id], |row| {
            Ok(Note {
                kind: row.get(0)?,
                rule: row.get(1)?,
                address: row.get(2)?,
                message: row.get(3)?,
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// The newest apply, rollback or destroy of `stack`, whatever its outcome: the
    /// last attempt, which may not be what runs.
    pub fn last_attempt(&self, stack: &str) -> Result<Option<SignedReceipt>> {
        self.newest_receipt(
            "WHERE stack = ?1 AND kind IN ('apply', 'rollback', 'destroy')",
            params![stack],
        )
    }

    /// The newest plan, apply, rollback or destroy of `stack`, when it failed: what
    /// `status` shows, with its reason, until a later try succeeds.
    pub fn failed_try(&self, stack: &str) -> Result<Option<SignedReceipt>> {
        Ok(self
            .newest_receipt(
                "WHERE stack = ?1 AND kind IN ('plan', 'apply', 'rollback', 'destroy')",
                params![stack],
            )?
            .filter(|r| r.receipt.outcome == stackpack_schema::receipt::Outcome::Failed))
    }

    /// Every stack this runner has applied, rolled back or destroyed, or tried to
    /// (a failed plan counts: the stack was tried), by name.
    pub fn attempted_stacks(&self) -> Result<Vec<String>> {
        let conn = self.conn();
        let mut statement = conn.prepare(
            "SELECT DISTINCT stack FROM receipts
             WHERE kind IN ('apply', 'rollback', 'destroy') OR (kind = 'plan' AND outcome = 'failed')
             ORDER BY stack",
        )?;
        let rows = statement.query_map([], |row| row.get(0))?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// The receipt `id`.
    pub fn receipt(&self, id: &str) -> Result<Option<SignedReceipt>> {
        self.newest_receipt("WHERE id = ?1", params![id])
    }

    /// The newest receipt of `stack` of kind `kind`.
    pub fn last_receipt(&self, stack: &str, kind: ReceiptKind) -> Result<Option<SignedReceipt>> {
        self.newest_receipt(
            "WHERE stack = ?1 AND kind = ?2",
            params![stack, kind.as_str()],
        )
    }

    fn newest_receipt(
        &self,
        filter: &str,
        params: impl rusqlite::Params,
    ) -> Result<Option<SignedReceipt>> {
        let document: Option<String> = self
            .conn()
            .query_row(
                &format!("SELECT document FROM receipts {filter} ORDER BY seq DESC LIMIT 1"),
                params,
                |row| row.get(0),
            )
            .optional()?;
        document
            .map(|d| {
                SignedReceipt::from_bytes(d.as_bytes()).map_err(|e| LedgerError::Corrupt {
                    what: "receipt",
                    detail: e.to_string(),
                })
            })
            .transpose()
    }

    /// Every receipt, oldest first.
    pub fn receipts(&self, unreported_only: bool) -> Result<Vec<StoredReceipt>> {
        let conn = self.conn();
        let mut statement = conn.prepare(if unreported_only {
            "SELECT document, reported_at FROM receipts WHERE reported_at IS NULL ORDER BY seq"
        } else {
            "SELECT document, reported_at FROM receipts ORDER BY seq"
        })?;
        let rows = statement.query_map([], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, Option<String>>(1)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (document, reported_at) = row?;
            let signed = SignedReceipt::from_bytes(document.as_bytes()).map_err(|e| {
                LedgerError::Corrupt {
                    what: "receipt",
                    detail: e.to_string(),
                }
            })?;
            out.push(StoredReceipt {
                signed,
                reported_at,
            });
        }
        Ok(out)
    }

    pub fn mark_reported(&self, id: &str, at: &str) -> Result<()> {
        self.conn().execute(
            "UPDATE receipts SET reported_at = ?2 WHERE id = ?1 AND reported_at IS NULL",
            params![id, at],
        )?;
        Ok(())
    }
}

/// Whether a process with this id exists (another user's counts as existing).
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists.
    let answer = unsafe { libc::kill(pid, 0) };
    answer == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ledger_from_before_schema_versions_opens_keeps_its_rows_and_is_versioned() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(MIGRATIONS[0].1).unwrap();
            conn.execute(
                "INSERT INTO deployments (kind, stack, version, digest, receipt_id, inputs_file, applied_at)
                 VALUES ('apply', 'net', '1.0.0', 'sha256:00', 'r1', 'in.tfvars', '2026-01-01T00:00:00Z')",
                [],
            )
            .unwrap();
        }
        let ledger = Ledger::open(&path).unwrap();
        assert_eq!(ledger.history("net").unwrap().len(), 1);
        let version: i64 = ledger
            .conn()
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .unwrap();
        assert_eq!(version, MIGRATIONS.len() as i64);
    }

    #[test]
    fn every_ledger_migration_file_is_listed_once_in_order() {
        let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations/ledger");
        let mut files: Vec<String> = std::fs::read_dir(folder)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        let listed: Vec<String> = MIGRATIONS
            .iter()
            .map(|(name, _)| format!("{name}.sql"))
            .collect();
        assert_eq!(files, listed);
        for (index, (name, _)) in MIGRATIONS.iter().enumerate() {
            assert!(
                name.starts_with(&format!("{:04}_", index + 1)),
                "{name} in order"
            );
        }
    }

    #[test]
    fn a_ledger_written_by_a_newer_runner_is_refused_and_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", 99)
            .unwrap();
        let before = std::fs::read(&path).unwrap();
        let refused = Ledger::open(&path).err().expect("refused");
        assert!(
            matches!(refused, LedgerError::Newer { found: 99, .. }),
            "{refused}"
        );
        assert!(refused.to_string().contains("newer stackpack-runner"));
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }

    fn deploy(ledger: &Ledger, kind: &str, version: &str) {
        ledger
            .add_deployment(&Deployment {
                kind: kind.parse().unwrap(),
                stack: "net".into(),
                version: Version::parse(version).unwrap(),
                digest: String::new(),
                receipt_id: format!("{kind}-{version}"),
                inputs_file: String::new(),
                applied_at: String::new(),
            })
            .unwrap();
    }

    fn target(ledger: &Ledger) -> Option<String> {
        ledger
            .rollback_target("net")
            .unwrap()
            .map(|d| d.version.to_string())
    }

    #[test]
    fn rollback_walks_back_through_upgrades_and_never_bounces() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::open(&dir.path().join("ledger.sqlite")).unwrap();
        assert_eq!(target(&ledger), None);
        deploy(&ledger, "apply", "1.0.0");
        assert_eq!(target(&ledger), None);
        deploy(&ledger, "apply", "1.1.0");
        deploy(&ledger, "apply", "1.1.0");
        deploy(&ledger, "apply", "1.2.0");
        assert_eq!(target(&ledger).as_deref(), Some("1.1.0"));
        deploy(&ledger, "rollback", "1.1.0");
        assert_eq!(target(&ledger).as_deref(), Some("1.0.0"));
        deploy(&ledger, "rollback", "1.0.0");
        assert_eq!(target(&ledger), None);
        deploy(&ledger, "apply", "1.3.0");
        assert_eq!(target(&ledger).as_deref(), Some("1.0.0"));
    }

    #[test]
    fn a_destroyed_stack_runs_nothing_and_has_nothing_to_roll_back_to() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::open(&dir.path().join("ledger.sqlite")).unwrap();
        deploy(&ledger, "apply", "1.0.0");
        deploy(&ledger, "apply", "1.1.0");
        deploy(&ledger, "destroy", "1.1.0");
        assert!(ledger.current("net").unwrap().is_none());
        assert!(ledger.current_all().unwrap().is_empty());
        assert_eq!(target(&ledger), None);
        deploy(&ledger, "apply", "1.1.0");
        assert_eq!(
            ledger
                .current("net")
                .unwrap()
                .map(|d| d.version.to_string()),
            Some("1.1.0".to_string())
        );
        assert_eq!(target(&ledger), None);
    }
}
