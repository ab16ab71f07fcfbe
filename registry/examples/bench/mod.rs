//! What the benchmark clients share (`rolloutbench`, `alertbench`): customers'
//! tokens written offline and read back, and percentiles.

use std::io::BufRead;

use rusqlite::Connection;
use stackpack_registry::auth::Role;
use stackpack_registry::db;

/// Creates a token for customer `id` and returns it, as `token create --role
/// customer` would print it.
pub fn customer_token(tx: &Connection, id: &str, now: &str) -> rusqlite::Result<String> {
    let (token, hash, token_id) = stackpack_registry::auth::new_token();
    let new = db::tokens::NewToken {
        role: Role::Customer,
        name: None,
        customer: Some(id),
        created: now,
        expires_at: None,
    };
    db::tokens::insert(tx, &token_id, &hash, &new)?;
    Ok(token)
}

/// The `CUSTOMER TOKEN` lines a seeder wrote, as `(customer, "Bearer TOKEN")`.
pub fn read_tokens(path: &str) -> Vec<(String, String)> {
    let file = std::fs::File::open(path).expect("the tokens file opens");
    std::io::BufReader::new(file)
        .lines()
        .map(|line| {
            let line = line.expect("the tokens file reads");
            let (id, token) = line.split_once(' ').expect("lines are `CUSTOMER TOKEN`");
            (id.to_string(), format!("Bearer {token}"))
        })
        .collect()
}

/// The `p` quantile (0 to 1) of `sorted`, nearest rank.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}
