//! The PostgreSQL backend (issue 27), against a real PostgreSQL started for each
//! test: the modules already behind `db::sql::Sql` give the same answers on SQLite
//! and PostgreSQL, and PostgreSQL's migrations are versioned like SQLite's.

use stackpack_registry::auth::Role;
use stackpack_registry::db::sql::{Pg, PgError, Sql};
use stackpack_registry::db::{leases, pg, sessions, tokens, Db};
use stackpack_test_support::servers::Postgres;

/// Every answer `tokens` gives to one fixed sequence of calls, as text to compare.
fn token_story<C: Sql>(conn: &C) -> Vec<String> {
    let mut answers = vec![format!("count {}", tokens::count(conn).unwrap())];
    let ci = tokens::NewToken {
        role: Role::Publisher,
        name: Some("ci"),
        customer: None,
        created: "2026-01-01T00:00:00Z",
        expires_at: None,
    };
    let acme = tokens::NewToken {
        role: Role::Reader,
        name: None,
        customer: Some("acme"),
        created: "2026-01-02T00:00:00Z",
        expires_at: Some("2027-01-01T00:00:00Z"),
    };
    tokens::insert(conn, "t1", &[1, 2, 3, 0, 255], &ci).unwrap();
    tokens::insert(conn, "t2", &[9; 32], &acme).unwrap();
    // Names are unique, hashes too: both backends refuse the second.
    let again = tokens::insert(conn, "t3", &[7], &ci);
    answers.push(format!("duplicate name refused {}", again.is_err()));
    let same_hash = tokens::insert(conn, "t4", &[9; 32], &acme);
    answers.push(format!("duplicate hash refused {}", same_hash.is_err()));
    for name in ["ci", "other"] {
        let taken = tokens::name_taken(conn, name).unwrap();
        answers.push(format!("{name} taken {taken}"));
    }
    for hash in [&[1, 2, 3, 0, 255][..], &[8]] {
        let row = tokens::by_hash(conn, hash).unwrap();
        answers.push(match row {
            Some(r) => format!(
                "{} {:?} {} {:?} {:?} {:?}",
                r.id,
                r.hash,
                r.role.as_str(),
                r.customer,
                r.expires_at.map(|t| t.to_string()),
                r.revoked_at.map(|t| t.to_string())
            ),
            None => "no token".into(),
        });
    }
    let first = tokens::revoke(conn, "t1", "2026-02-01T00:00:00Z").unwrap();
    let second = tokens::revoke(conn, "t1", "2026-03-01T00:00:00Z").unwrap();
    let missing = tokens::revoke(conn, "nope", "2026-03-01T00:00:00Z").unwrap();
    answers.push(format!("revoked {first:?} {second:?} {missing:?}"));
    tokens::touch(conn, "t2", "2026-02-02T00:00:00Z").unwrap();
    for info in tokens::list(conn).unwrap() {
        answers.push(serde_json::to_string(&info).unwrap());
    }
    answers.push(format!("count {}", tokens::count(conn).unwrap()));
    answers
}

#[test]
fn tokens_answer_the_same_on_sqlite_and_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("registry.db");
    drop(Db::open(&path, 1).unwrap());
    let sqlite = token_story(&rusqlite::Connection::open(&path).unwrap());

    let server = Postgres::start();
    let mut client = pg::connect(&server.url()).unwrap();
    pg::migrate(&mut client).unwrap();
    let postgres = token_story(&Pg::new(client));

    assert_eq!(sqlite, postgres);
    // The story is not empty on either: both stored and read back two tokens.
    assert!(sqlite.iter().any(|a| a == "count 2"), "{sqlite:?}");
    assert!(sqlite.iter().any(|a| a == "duplicate name refused true"));
    assert!(sqlite.iter().any(|a| a == "duplicate hash refused true"));
    assert!(sqlite
        .iter()
        .any(|a| a.contains("\"lastUsed\":\"2026-02-02T00:00:00Z\"")));
}

/// Every answer `leases` and `sessions` give to one fixed sequence of calls.
fn lease_and_session_story<C: Sql>(conn: &C) -> Vec<String> {
    let mut answers = Vec::new();
    let mut say = |what: String| answers.push(what);
    say(format!(
        "{:?}",
        leases::take(conn, "gc", "a", 100, 200).unwrap()
    ));
    // b is refused while a holds it, a renews, and b gets it once it lapsed.
    say(format!(
        "{:?}",
        leases::take(conn, "gc", "b", 150, 250).unwrap()
    ));
    say(format!(
        "{:?}",
        leases::take(conn, "gc", "a", 150, 300).unwrap()
    ));
    say(format!(
        "{:?}",
        leases::take(conn, "gc", "b", 300, 400).unwrap()
    ));
    say(format!(
        "{:?}",
        leases::take_over(conn, "gc", "c", "a", 500).unwrap()
    ));
    say(format!(
        "{:?}",
        leases::take_over(conn, "gc", "c", "b", 500).unwrap()
    ));
    leases::give_back(conn, "gc", "b").unwrap();
    say(format!("{:?}", leases::holder_of(conn, "gc").unwrap()));
    leases::give_back(conn, "gc", "c").unwrap();
    say(format!("{:?}", leases::holder_of(conn, "gc").unwrap()));

    sessions::open(conn, &[1; 32], &[0xaa; 32], 1_000, 2_000).unwrap();
    sessions::open(conn, &[2; 32], &[0xbb; 32], 1_500, 3_000).unwrap();
    say(format!(
        "{:?}",
        sessions::token_hash(conn, &[1; 32], 1_999).unwrap()
    ));
    say(format!(
        "{:?}",
        sessions::token_hash(conn, &[1; 32], 2_000).unwrap()
    ));
    // Opening a session later forgets the expired one.
    sessions::open(conn, &[3; 32], &[0xcc; 32], 2_500, 4_000).unwrap();
    sessions::open(conn, &[1; 32], &[0xdd; 32], 2_500, 4_000).unwrap();
    sessions::close(conn, &[2; 32]).unwrap();
    for id in [[1; 32], [2; 32], [3; 32]] {
        say(format!(
            "{:?}",
            sessions::token_hash(conn, &id, 2_600).unwrap()
        ));
    }
    answers
}

#[test]
fn leases_and_sessions_answer_the_same_on_sqlite_and_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("registry.db");
    drop(Db::open(&path, 1).unwrap());
    let sqlite = lease_and_session_story(&rusqlite::Connection::open(&path).unwrap());

    let server = Postgres::start();
    let mut client = pg::connect(&server.url()).unwrap();
    pg::migrate(&mut client).unwrap();
    let postgres = lease_and_session_story(&Pg::new(client));

    assert_eq!(sqlite, postgres);
    assert_eq!(sqlite[0], "Ok(())");
    assert!(sqlite[1].contains("holder: \"a\""), "{sqlite:?}");
}

/// Two replicas take the `gc` lease at once, each in its own PostgreSQL
/// transaction: the second waits for the first's row and then finds it held.
#[test]
fn of_two_postgres_transactions_taking_one_lease_only_one_gets_it() {
    let server = Postgres::start();
    let mut first = pg::connect(&server.url()).unwrap();
    pg::migrate(&mut first).unwrap();
    let mut second = pg::connect(&server.url()).unwrap();
    let tx = Pg::new(first.transaction().unwrap());
    assert_eq!(leases::take(&tx, "gc", "a", 100, 200).unwrap(), Ok(()));
    let racer = std::thread::spawn(move || {
        let tx = Pg::new(second.transaction().unwrap());
        let taken = leases::take(&tx, "gc", "b", 100, 200).unwrap();
        tx.into_inner().commit().unwrap();
        taken
    });
    // Give the racer time to block on the row before the first commits.
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        !racer.is_finished(),
        "the second took the lease without waiting"
    );
    tx.into_inner().commit().unwrap();
    let held = racer.join().unwrap().expect_err("both took the lease");
    assert_eq!(held.holder, "a");
}

#[test]
fn a_postgres_transaction_rolled_back_leaves_nothing() {
    let server = Postgres::start();
    let mut client = pg::connect(&server.url()).unwrap();
    pg::migrate(&mut client).unwrap();
    let new = tokens::NewToken {
        role: Role::Support,
        name: Some("desk"),
        customer: None,
        created: "2026-01-01T00:00:00Z",
        expires_at: None,
    };
    {
        let tx = Pg::new(client.transaction().unwrap());
        tokens::insert(&tx, "t1", &[1], &new).unwrap();
        assert_eq!(tokens::count(&tx).unwrap(), 1);
        // Dropped without commit: rolled back.
    }
    let tx = Pg::new(client.transaction().unwrap());
    tokens::insert(&tx, "t2", &[2], &new).unwrap();
    tx.into_inner().commit().unwrap();
    let conn = Pg::new(client);
    let ids: Vec<String> = tokens::list(&conn)
        .unwrap()
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(ids, ["t2"]);
}

#[test]
fn postgres_migrations_run_once_and_refuse_a_newer_schema() {
    let server = Postgres::start();
    let mut client = pg::connect(&server.url()).unwrap();
    assert_eq!(pg::migrate(&mut client).unwrap(), 0);
    assert_eq!(pg::migrate(&mut client).unwrap(), pg::SCHEMA_VERSION);
    client
        .execute("UPDATE schema_version SET version = version + 1", &[])
        .unwrap();
    match pg::migrate(&mut client) {
        Err(PgError::Newer { found, known }) => {
            assert_eq!((found, known), (pg::SCHEMA_VERSION + 1, pg::SCHEMA_VERSION));
        }
        other => panic!("a newer schema was not refused: {other:?}"),
    }
}

#[test]
fn postgres_down_is_an_error_naming_it() {
    let port = stackpack_test_support::free_port();
    let url = format!("postgres://stackpack@127.0.0.1:{port}/postgres");
    let error = pg::connect(&url).err().expect("nothing listens there");
    assert!(error.to_string().starts_with("postgresql:"), "{error}");
}

#[test]
fn postgres_errors_never_print_the_password_in_the_url() {
    let server = Postgres::start();
    let down = stackpack_test_support::free_port();
    for url in [
        // Nothing listens there.
        format!("postgres://stackpack:hunter2secret@127.0.0.1:{down}/postgres"),
        // A database that does not exist, on a server that answers.
        format!(
            "postgres://stackpack:hunter2secret@127.0.0.1:{}/nowhere",
            server.port
        ),
        // Not a URL the client can read.
        "postgres://stackpack:hunter2secret@127.0.0.1:notaport/postgres".to_string(),
    ] {
        let error = pg::connect(&url).err().expect("the connection fails");
        let shown = format!("{error} / {error:?}");
        assert!(!shown.contains("hunter2secret"), "{shown}");
    }
}

/// Run only by `a_killed_test_leaves_no_postgres_running`, as its child: starts a
/// cluster, says where (port and folder) in the file named by
/// `STACKPACK_HOLD_POSTGRES`, and waits to be killed.
#[test]
#[ignore = "the child of a_killed_test_leaves_no_postgres_running"]
fn hold_a_postgres_until_killed() {
    let Some(out) = std::env::var_os("STACKPACK_HOLD_POSTGRES") else {
        return;
    };
    let server = Postgres::start();
    let out = std::path::PathBuf::from(out);
    let partial = out.with_extension("partial");
    let said = format!("{}\n{}", server.port, server.dir().display());
    std::fs::write(&partial, said).unwrap();
    std::fs::rename(&partial, &out).unwrap();
    std::thread::sleep(std::time::Duration::from_secs(600));
}

/// A test killed outright (SIGKILL: no Drop runs) leaves no PostgreSQL behind: the
/// watchdog `Postgres` starts stops the cluster and removes its folder.
#[test]
fn a_killed_test_leaves_no_postgres_running() {
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let said = dir.path().join("held");
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "postgres_backend::hold_a_postgres_until_killed",
            "--ignored",
        ])
        .env("STACKPACK_HOLD_POSTGRES", &said)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let said = loop {
        if let Ok(said) = std::fs::read_to_string(&said) {
            break said;
        }
        assert!(Instant::now() < deadline, "the child started no PostgreSQL");
        assert!(child.try_wait().unwrap().is_none(), "the child ended early");
        std::thread::sleep(Duration::from_millis(100));
    };
    let (port, cluster) = said.split_once('\n').unwrap();
    let url = format!("postgres://stackpack@127.0.0.1:{port}/postgres");
    pg::connect(&url).expect("the child's cluster answers");

    child.kill().unwrap();
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while pg::connect(&url).is_ok() || std::path::Path::new(cluster).exists() {
        assert!(
            Instant::now() < deadline,
            "the killed test's cluster still runs (or its folder {cluster} is left)"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}
