//! Leases: a job only one process may run at a time (`gc`) takes its row for a
//! while. The row names the holder and when the lease lapses, so a replica killed
//! mid-job holds nobody up for longer than that. Taking, renewing and giving back
//! are single statements in the caller's write transaction: the database, not a
//! process's memory, decides who holds it.

use super::sql::{Decode, FromRow, Row, Sql};

/// Who holds a lease, and until when (nanoseconds since the epoch).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    pub holder: String,
    pub until_ns: i64,
}

impl FromRow for Held {
    fn from_row(r: &Row) -> Result<Self, Decode> {
        Ok(Held {
            holder: r.get("holder")?,
            until_ns: r.get("until_ns")?,
        })
    }
}

/// Takes lease `name` for `holder` until `until_ns`, if nobody else holds it at
/// `now_ns` (the holder itself may take it again: that renews it). `Err` names
/// the one who holds it.
pub fn take<C: Sql + ?Sized>(
    conn: &C,
    name: &str,
    holder: &str,
    now_ns: i64,
    until_ns: i64,
) -> Result<Result<(), Held>, C::Error> {
    let taken = conn.execute(
        "INSERT INTO leases (name, holder, until_ns) VALUES ($1, $2, $4)
         ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, until_ns = excluded.until_ns
         WHERE leases.holder = excluded.holder OR leases.until_ns <= $3",
        &[name.into(), holder.into(), now_ns.into(), until_ns.into()],
    )?;
    if taken > 0 {
        return Ok(Ok(()));
    }
    Ok(Err(holder_of(conn, name)?.unwrap_or(Held {
        holder: String::new(),
        until_ns: now_ns,
    })))
}

/// Who holds lease `name`, if anyone ever took it.
pub fn holder_of<C: Sql + ?Sized>(conn: &C, name: &str) -> Result<Option<Held>, C::Error> {
    let row = conn.query_opt(
        "SELECT holder, until_ns FROM leases WHERE name = $1",
        &[name.into()],
    )?;
    Ok(row.as_ref().map(Held::from_row).transpose()?)
}

/// Gives lease `name` back, if `holder` still holds it.
pub fn give_back<C: Sql + ?Sized>(conn: &C, name: &str, holder: &str) -> Result<(), C::Error> {
    conn.execute(
        "DELETE FROM leases WHERE name = $1 AND holder = $2",
        &[name.into(), holder.into()],
    )?;
    Ok(())
}

/// Takes lease `name` over from `from` (a holder known to be dead), if `from`
/// still holds it.
pub fn take_over<C: Sql + ?Sized>(
    conn: &C,
    name: &str,
    holder: &str,
    from: &str,
    until_ns: i64,
) -> Result<bool, C::Error> {
    let changed = conn.execute(
        "UPDATE leases SET holder = $2, until_ns = $4 WHERE name = $1 AND holder = $3",
        &[name.into(), holder.into(), from.into(), until_ns.into()],
    )?;
    Ok(changed > 0)
}
