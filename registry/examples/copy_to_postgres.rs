//! Copies a registry's SQLite database into an empty PostgreSQL database with
//! `db::copy` (what `stackpack-registry migrate --to postgres://…` is to run), for
//! `scripts/bench/scaleout.sh`: the fleet it seeds once in SQLite becomes the
//! production layout's metadata.
//!
//! ```text
//! copy_to_postgres DATA/registry.db postgres://user@host:port/database
//! ```
//!
//! Prints the copy's summary (each table's rows and digest) on stdout; on a refusal
//! prints the error (which never holds the URL's password) and exits 1.

use stackpack_registry::db;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [sqlite, url] = args.as_slice() else {
        eprintln!("usage: copy_to_postgres DATA/registry.db postgres://user@host:port/database");
        std::process::exit(2);
    };
    let mut client = match postgres::Client::connect(url, postgres::NoTls) {
        Ok(client) => client,
        Err(error) => {
            // The driver's message names the host and the failure, not the password.
            eprintln!("error: cannot connect to PostgreSQL for the copy: {error}");
            std::process::exit(1);
        }
    };
    match db::copy::copy(std::path::Path::new(sqlite), &mut client) {
        Ok(summary) => print!("{summary}"),
        Err(error) => {
            eprintln!("error: {error}");
            std::process::exit(1);
        }
    }
}
