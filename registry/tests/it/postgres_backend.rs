//! The PostgreSQL backend (issue 27), against a real PostgreSQL started for each
//! test: the modules already behind `db::sql::Sql` give the same answers on SQLite
//! and PostgreSQL, and PostgreSQL's migrations are versioned like SQLite's.

use stackpack_registry::auth::Role;
use stackpack_registry::db::sql::{Pg, PgError, Sql};
use stackpack_registry::db::{
    blobs, customers, leases, ledger, manifests, pg, release_index, sessions, settings,
    support_bundles, tokens, uploads, Db,
};
use stackpack_test_support::servers::Postgres;

/// A story's answers on SQLite: a fresh registry database, the story in one
/// transaction, committed.
pub(crate) fn on_sqlite(story: impl FnOnce(&rusqlite::Transaction) -> Vec<String>) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("registry.db");
    drop(Db::open(&path, 1).unwrap());
    let mut connection = rusqlite::Connection::open(&path).unwrap();
    let tx = connection.transaction().unwrap();
    let answers = story(&tx);
    tx.commit().unwrap();
    answers
}

/// A client of a new database `name` on `server`, created with ICU's `en-US`
/// collation (where, without `COLLATE "C"`, text sorts with case and punctuation
/// set aside) and migrated to this build's schema.
pub(crate) fn icu_database(server: &Postgres, name: &str) -> postgres::Client {
    let mut admin = pg::connect(&server.url()).unwrap();
    admin
        .batch_execute(&format!(
            "CREATE DATABASE {name} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US'"
        ))
        .unwrap();
    let mut client = pg::connect(&server.url().replace("/postgres", &format!("/{name}"))).unwrap();
    pg::migrate(&mut client).unwrap();
    client
}

/// Asserts both backends gave the same answers, naming the first that differs.
pub(crate) fn assert_same(sqlite: &[String], postgres: &[String]) {
    for (i, (s, p)) in sqlite.iter().zip(postgres).enumerate() {
        assert_eq!(s, p, "answer {i} differs");
    }
    assert_eq!(sqlite.len(), postgres.len(), "as many answers");
}

/// Every answer `tokens` gives to one fixed sequence of calls, as text to compare.
pub(crate) fn token_story<C: Sql>(conn: &C) -> Vec<String> {
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

/// A row read by column name, and what a row that does not read as asked says:
/// the columns' names as each backend reports them, the values, and the errors.
fn row_story<C: Sql>(conn: &C) -> Vec<String> {
    let row = conn
        .query_one(
            "SELECT 7 AS n, 'x' AS name, CAST(NULL AS TEXT) AS note, 1 = 1 AS yes",
            &[],
        )
        .unwrap();
    vec![
        format!("columns {:?}", row.columns()),
        format!("n {}", row.get::<i64>("n").unwrap()),
        format!("name {}", row.get::<String>("name").unwrap()),
        format!("note {:?}", row.get::<Option<String>>("note").unwrap()),
        format!("yes {}", row.get::<bool>("yes").unwrap()),
        format!("missing: {}", row.get::<i64>("count").unwrap_err()),
        format!("wrong type: {}", row.get::<i64>("name").unwrap_err()),
        format!("unparsed: {}", row.parsed::<u8>("name").unwrap_err()),
    ]
}

#[test]
fn rows_read_by_column_name_answer_the_same_on_sqlite_and_postgres() {
    let sqlite = row_story(&rusqlite::Connection::open_in_memory().unwrap());

    let server = Postgres::start();
    let postgres = row_story(&Pg::new(pg::connect(&server.url()).unwrap()));

    assert_eq!(sqlite, postgres);
    assert!(
        sqlite.contains(
            &"missing: the row has no column `count` (it has `n`, `name`, `note`, `yes`)"
                .to_string()
        ),
        "{sqlite:?}"
    );
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

/// Every answer `settings`, `uploads`, `blobs`, `manifests` and `support_bundles`
/// give to one push's worth of calls: an upload session's parts, the blob it
/// became, a manifest and an index over it, tags and referrers, where the blobs
/// live, and a customer's support bundles.
pub(crate) fn push_story<C: Sql>(conn: &C) -> Vec<String> {
    let mut answers = Vec::new();
    answers.extend(settings_story(conn));
    answers.extend(upload_story(conn));
    answers.extend(blob_story(conn));
    answers.extend(manifest_story(conn));
    answers.extend(support_bundle_story(conn));
    answers
}

fn digest(of: &str) -> String {
    stackpack_schema::Digest::of(of.as_bytes()).to_string()
}

fn sorted(mut digests: Vec<String>) -> Vec<String> {
    // `unreferenced` promises no order: gc takes them as they come.
    digests.sort();
    digests
}

fn settings_story<C: Sql>(conn: &C) -> Vec<String> {
    let mut answers = vec![format!(
        "{:?}",
        settings::get(conn, settings::BLOBS).unwrap()
    )];
    settings::set(conn, settings::BLOBS, "data-folder").unwrap();
    settings::set(conn, settings::BLOBS, "s3://bucket/prefix").unwrap();
    answers.push(format!(
        "{:?}",
        settings::get(conn, settings::BLOBS).unwrap()
    ));
    answers.push(format!("any blob {}", settings::any_blob(conn).unwrap()));
    answers
}

fn upload_story<C: Sql>(conn: &C) -> Vec<String> {
    let mut answers = Vec::new();
    uploads::create(conn, "u1", "acme/app", "tok", 100).unwrap();
    uploads::create(conn, "u2", "acme/app", "other", 100).unwrap();
    let segment = |start, size| uploads::Segment { start, size };
    // Parts that continue the session are kept; one that does not is refused.
    for (part, now) in [
        (segment(0, 10), 110),
        (segment(5, 5), 120),
        (segment(10, 5), 130),
    ] {
        answers.push(format!(
            "{:?}",
            uploads::add_segment(conn, "u1", part, now).unwrap()
        ));
    }
    answers.push(format!(
        "{:?}",
        uploads::add_segment(conn, "nope", segment(0, 1), 1).unwrap()
    ));
    answers.push(format!("{:?}", uploads::segments(conn, "u1").unwrap()));
    answers.push(format!(
        "size {}",
        uploads::segments_size(conn, "u1").unwrap()
    ));
    answers.push(format!(
        "size {}",
        uploads::segments_size(conn, "u2").unwrap()
    ));
    let u1 = uploads::get(conn, "u1").unwrap().unwrap();
    answers.push(format!("{} {}", u1.repo, u1.updated));
    answers.push(format!(
        "open {}",
        uploads::open_by_owner(conn, "tok", 120).unwrap()
    ));
    answers.push(format!("{:?}", uploads::expired(conn, 100, 10).unwrap()));
    let mut ids: Vec<String> = uploads::all_ids(conn).unwrap().into_iter().collect();
    ids.sort();
    answers.push(format!("{ids:?}"));
    // Deleting a session forgets its parts.
    answers.push(format!("{:?}", uploads::delete(conn, "u1").unwrap()));
    answers.push(format!("{:?}", uploads::delete(conn, "u1").unwrap()));
    answers.push(format!("{:?}", uploads::segments(conn, "u1").unwrap()));
    answers
}

fn blob_story<C: Sql>(conn: &C) -> Vec<String> {
    let (layer, config) = (digest("layer"), digest("config"));
    blobs::insert_and_link(conn, "acme/app", &layer, 15, 100).unwrap();
    // Recorded again (another push of the same bytes): nothing changes.
    blobs::insert_and_link(conn, "acme/app", &layer, 15, 200).unwrap();
    blobs::insert_and_link(conn, "acme/app", &config, 2, 100).unwrap();
    blobs::link(conn, "acme/other", &layer).unwrap();
    let mut answers = vec![
        format!(
            "{:?}",
            blobs::size_in_repo(conn, "acme/app", &layer).unwrap()
        ),
        format!(
            "{:?}",
            blobs::size_in_repo(conn, "acme/nobody", &layer).unwrap()
        ),
        format!("{:?}", blobs::size(conn, &config).unwrap()),
        format!("{:?}", blobs::size(conn, &digest("never")).unwrap()),
        format!("{:?}", blobs::unlink(conn, "acme/other", &layer).unwrap()),
        format!("{:?}", blobs::unlink(conn, "acme/other", &layer).unwrap()),
        format!("any blob {}", settings::any_blob(conn).unwrap()),
    ];
    let mut all: Vec<String> = blobs::all(conn).unwrap().into_iter().collect();
    all.sort();
    answers.push(format!("{all:?}"));
    answers
}

fn manifest_story<C: Sql>(conn: &C) -> Vec<String> {
    let (layer, config) = (digest("layer"), digest("config"));
    let (image, index, signature) = (digest("image"), digest("index"), digest("signature"));
    let (image, index, signature) = (image.as_str(), index.as_str(), signature.as_str());
    fn new<'a>(digest: &'a str, content: &'a [u8]) -> manifests::NewManifest<'a> {
        manifests::NewManifest {
            repo: "acme/app",
            digest,
            media_type: "application/vnd.oci.image.manifest.v1+json",
            artifact_type: None,
            subject: None,
            annotations: None,
            content,
            blobs: &[],
            manifests: &[],
        }
    }
    let image_blobs = [config.clone(), layer.clone()];
    let index_children = [image.to_string()];
    manifests::insert(
        conn,
        &manifests::NewManifest {
            blobs: &image_blobs,
            ..new(image, b"{\"image\":1}")
        },
        100,
    )
    .unwrap();
    manifests::insert(
        conn,
        &manifests::NewManifest {
            media_type: "application/vnd.oci.image.index.v1+json",
            manifests: &index_children,
            ..new(index, b"{\"index\":1}")
        },
        101,
    )
    .unwrap();
    manifests::insert(
        conn,
        &manifests::NewManifest {
            artifact_type: Some("application/vnd.dev.cosign"),
            subject: Some(image),
            annotations: Some("{\"by\":\"ci\"}"),
            ..new(signature, b"{\"signature\":1}")
        },
        102,
    )
    .unwrap();
    // Stored again: a no-op.
    manifests::insert(conn, &new(image, b"{\"image\":1}"), 200).unwrap();
    // Tags in byte order, as the distribution API pages them; mixed case and
    // punctuation tell byte order from a locale's.
    for (tag, target) in [
        ("v1", image),
        ("V1", image),
        ("latest", index),
        ("a-b", image),
        ("a.b", image),
        ("_x", index),
    ] {
        manifests::set_tag(conn, "acme/app", tag, target, 100).unwrap();
    }
    manifests::set_tag(conn, "acme/app", "v1", index, 150).unwrap();
    let shown = |m: Option<manifests::StoredManifest>| {
        m.map(|m| {
            format!(
                "{} {} {}",
                m.digest,
                m.media_type,
                String::from_utf8_lossy(&m.content)
            )
        })
    };
    let mut answers = vec![
        format!("{:?}", manifests::exists(conn, "acme/app", image).unwrap()),
        format!(
            "{:?}",
            manifests::exists(conn, "acme/other", image).unwrap()
        ),
        format!(
            "{:?}",
            shown(manifests::get_by_digest(conn, "acme/app", index).unwrap())
        ),
        format!(
            "{:?}",
            shown(manifests::get_by_tag(conn, "acme/app", "v1").unwrap())
        ),
        format!(
            "{:?}",
            shown(manifests::get_by_tag(conn, "acme/app", "nope").unwrap())
        ),
        format!(
            "{:?}",
            manifests::tag_digest(conn, "acme/app", "V1").unwrap()
        ),
        format!(
            "{:?}",
            manifests::list_tags(conn, "acme/app", None, None).unwrap()
        ),
        format!(
            "{:?}",
            manifests::list_tags(conn, "acme/app", Some("a.b"), Some(2)).unwrap()
        ),
        format!(
            "{:?}",
            manifests::list_repositories(conn, None, Some(5)).unwrap()
        ),
        format!(
            "{:?}",
            manifests::tags_depending_on(conn, "acme/app", image).unwrap()
        ),
        format!(
            "{:?}",
            blobs::referenced_in_repo(conn, "acme/app", &layer).unwrap()
        ),
        format!(
            "{:?}",
            sorted(blobs::unreferenced(conn, 1_000, 10).unwrap())
        ),
    ];
    for artifact_type in [None, Some("application/vnd.dev.cosign"), Some("other")] {
        let referrers = manifests::referrers(conn, "acme/app", image, artifact_type).unwrap();
        answers.push(format!(
            "{:?}",
            referrers
                .iter()
                .map(|r| format!(
                    "{} {:?} {} {:?}",
                    r.digest, r.artifact_type, r.size, r.annotations
                ))
                .collect::<Vec<_>>()
        ));
    }
    answers.push(format!(
        "{:?}",
        manifests::delete_tag(conn, "acme/app", "_x").unwrap()
    ));
    answers.push(format!(
        "{:?}",
        manifests::delete(conn, "acme/app", image).unwrap()
    ));
    answers.push(format!(
        "{:?}",
        manifests::delete(conn, "acme/app", image).unwrap()
    ));
    answers.push(format!(
        "{:?}",
        manifests::list_tags(conn, "acme/app", None, None).unwrap()
    ));
    answers.push(format!(
        "{:?}",
        sorted(blobs::unreferenced(conn, 1_000, 10).unwrap())
    ));
    blobs::delete_rows(conn, &[layer]).unwrap();
    answers.push(format!(
        "{:?}",
        blobs::size(conn, &digest("layer")).unwrap()
    ));
    answers.push(format!(
        "{:?}",
        manifests::repo_exists(conn, "acme/app").unwrap()
    ));
    answers.push(format!(
        "{:?}",
        manifests::repo_exists(conn, "acme/nobody").unwrap()
    ));
    answers
}

fn support_bundle_story<C: Sql>(conn: &C) -> Vec<String> {
    let first = support_bundles::insert(conn, "acme", b"first", "2026-01-01T00:00:00Z").unwrap();
    let second = support_bundles::insert(conn, "acme", b"second", "2026-01-02T00:00:00Z").unwrap();
    vec![
        format!("{first:?}"),
        format!("{second:?}"),
        format!("{:?}", support_bundles::latest(conn, "acme").unwrap()),
        format!("{:?}", support_bundles::latest(conn, "globex").unwrap()),
        format!(
            "{:?}",
            support_bundles::bytes(conn, "acme", first.id).unwrap()
        ),
        // Another customer's bundle id answers nothing.
        format!(
            "{:?}",
            support_bundles::bytes(conn, "globex", first.id).unwrap()
        ),
    ]
}

#[test]
fn a_push_answers_the_same_on_sqlite_and_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("registry.db");
    drop(Db::open(&path, 1).unwrap());
    let mut connection = rusqlite::Connection::open(&path).unwrap();
    // Through a transaction, as the handlers call them.
    let tx = connection.transaction().unwrap();
    let sqlite = push_story(&tx);
    tx.commit().unwrap();

    let server = Postgres::start();
    // A database whose default collation is a language's (ICU's en-US sets case
    // and punctuation aside), as a production one may well be: tag lists and the
    // catalog must still page in byte order, as on SQLite.
    let mut admin = pg::connect(&server.url()).unwrap();
    admin
        .batch_execute(
            "CREATE DATABASE push TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US'",
        )
        .unwrap();
    let url = server.url().replace("/postgres", "/push");
    let mut client = pg::connect(&url).unwrap();
    pg::migrate(&mut client).unwrap();
    let tx = Pg::new(client.transaction().unwrap());
    let postgres = push_story(&tx);
    tx.into_inner().commit().unwrap();

    for (i, (s, p)) in sqlite.iter().zip(&postgres).enumerate() {
        assert_eq!(s, p, "answer {i} differs");
    }
    assert_eq!(sqlite.len(), postgres.len());
    // And the answers are the ones a push relies on.
    let tags = sqlite.iter().find(|a| a.contains("\"latest\"")).unwrap();
    assert_eq!(tags, r#"["V1", "_x", "a-b", "a.b", "latest", "v1"]"#);
    assert!(
        sqlite.contains(&"Some(\"s3://bucket/prefix\")".to_string()),
        "{sqlite:?}"
    );
    assert!(
        sqlite.contains(
            &"[Segment { start: 0, size: 10 }, Segment { start: 10, size: 5 }]".to_string()
        ),
        "{sqlite:?}"
    );
}

/// Every answer `customers` gives as the vendor adds customers, sets and clears
/// their details, and support lists and searches them: ids, names and accounts in
/// any ASCII case, stacks and versions run, `%` and `_` taken literally.
fn customer_story<C: Sql>(conn: &C) -> Vec<String> {
    let now = "2026-03-01T00:00:00Z";
    let mut answers = Vec::new();
    ledger::register_customer(conn, "acme", Some("Acme Corp"), Some("prod"), now).unwrap();
    ledger::register_customer(conn, "globex", Some("Globex"), None, now).unwrap();
    let zeta = customers::Details {
        account: Some("ACC-42".into()),
        region: Some("eu-west-1".into()),
        notes: Some("100% _done_".into()),
        ..Default::default()
    };
    // Details given for a customer not yet known add it.
    customers::set_details(conn, "Zeta-1", &zeta, now).unwrap();
    let acme = customers::Details {
        account: Some("acme-aws".into()),
        contact: Some("ops@acme.example".into()),
        ..Default::default()
    };
    customers::set_details(conn, "acme", &acme, now).unwrap();
    for id in ["acme", "Zeta-1", "nobody"] {
        answers.push(format!("{:?}", customers::details(conn, id).unwrap()));
    }
    // An empty detail clears it; one not given stays.
    let clear = customers::Details {
        contact: Some(String::new()),
        ..Default::default()
    };
    customers::set_details(conn, "acme", &clear, now).unwrap();
    answers.push(format!("{:?}", customers::details(conn, "acme").unwrap()));
    // What the fleet runs (written by the `fleet` module, not ported yet).
    for (customer, stack, attempt, version, failed, drifted) in [
        ("acme", "web", Some("r1"), Some("1.2.0"), 1, 0),
        ("globex", "web", None, None, 0, 1),
        ("Zeta-1", "db", Some("r2"), Some("1.2.0"), 0, 1),
        ("Zeta-1", "web", Some("r3"), Some("1.3.0"), 0, 0),
    ] {
        conn.execute(
            "INSERT INTO fleet_cells (customer, stack, attempt_id, version, failed, drifted)
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                customer.into(),
                stack.into(),
                attempt.into(),
                version.into(),
                i64::from(failed).into(),
                i64::from(drifted).into(),
            ],
        )
        .unwrap();
    }
    for (q, limit) in [
        ("", 50),
        ("", 2),
        ("ACME", 50),
        ("zeta", 50),
        ("acc-", 50),
        ("GLOBEX", 50),
        ("web", 50),
        ("1.2.0", 50),
        ("%", 50),
        ("_", 50),
        ("nothing", 50),
    ] {
        let lines = customers::search(conn, q, limit).unwrap();
        answers.push(format!("{q:?} {limit}: {lines:?}"));
    }
    answers
}

fn ids(answer: &str) -> Vec<&str> {
    answer
        .split("id: \"")
        .skip(1)
        .map(|s| s.split('"').next().unwrap())
        .collect()
}

#[test]
fn customers_answer_the_same_on_sqlite_and_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("registry.db");
    drop(Db::open(&path, 1).unwrap());
    let mut connection = rusqlite::Connection::open(&path).unwrap();
    let tx = connection.transaction().unwrap();
    let sqlite = customer_story(&tx);
    tx.commit().unwrap();

    // On a database whose default collation is a language's, as in the push test:
    // customers still list in byte order ("Zeta-1" before "acme"), as on SQLite.
    let server = Postgres::start();
    let mut admin = pg::connect(&server.url()).unwrap();
    admin
        .batch_execute(
            "CREATE DATABASE people TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US'",
        )
        .unwrap();
    let url = server.url().replace("/postgres", "/people");
    let mut client = pg::connect(&url).unwrap();
    pg::migrate(&mut client).unwrap();
    let tx = Pg::new(client.transaction().unwrap());
    let postgres = customer_story(&tx);
    tx.into_inner().commit().unwrap();

    for (i, (s, p)) in sqlite.iter().zip(&postgres).enumerate() {
        assert_eq!(s, p, "answer {i} differs");
    }
    assert_eq!(sqlite.len(), postgres.len());
    // And the answers are the ones support relies on.
    let search = |q: &str| {
        let prefix = format!("{q:?} 50: ");
        ids(sqlite.iter().find(|a| a.starts_with(&prefix)).unwrap())
    };
    assert_eq!(search(""), ["Zeta-1", "acme", "globex"]);
    assert_eq!(search("ACME"), ["acme"]);
    assert_eq!(search("zeta"), ["Zeta-1"]);
    assert_eq!(search("acc-"), ["Zeta-1"]);
    assert_eq!(search("GLOBEX"), ["globex"]);
    assert_eq!(search("web"), ["Zeta-1", "acme", "globex"]);
    assert_eq!(search("1.2.0"), ["Zeta-1", "acme"]);
    assert!(search("%").is_empty() && search("_").is_empty());
    assert!(
        sqlite[3].contains("account: Some(\"acme-aws\")"),
        "{}",
        sqlite[3]
    );
    assert!(!sqlite[3].contains("ops@acme"), "{}", sqlite[3]);
    assert_eq!(sqlite[2], "None");
}

/// A release version as `record` takes it: `name` at `version`, its index `index`
/// (a digest made from that text), one stack and one service per name given.
pub(crate) fn release(
    name: &str,
    version: &str,
    index: &str,
    stacks: &[&str],
) -> release_index::NewReleaseIndex {
    use stackpack_registry::api::{ReleaseServicePart, ReleaseStackPart, ReleaseVersion};
    let version: semver::Version = version.parse().unwrap();
    release_index::NewReleaseIndex {
        release: ReleaseVersion {
            name: name.into(),
            prerelease: !version.pre.is_empty(),
            version,
            repository: format!("acme/releases/{name}"),
            digest: index_digest(index),
            published_at: "2026-03-01T00:00:00Z".parse().unwrap(),
        },
        stacks: stacks
            .iter()
            .map(|stack| ReleaseStackPart {
                stack: (*stack).into(),
                version: "1.2.0".parse().unwrap(),
                digest: index_digest(stack),
            })
            .collect(),
        services: stacks
            .iter()
            .map(|stack| ReleaseServicePart {
                service: format!("{stack}-image"),
                reference: format!("ghcr.io/acme/{stack}:1.2.0"),
                digest: index_digest(&format!("{stack}-image")),
            })
            .collect(),
    }
}

pub(crate) fn index_digest(of: &str) -> stackpack_schema::Digest {
    stackpack_schema::Digest::of(of.as_bytes())
}

/// Every answer `release_index` gives as release indexes are pushed, moved and
/// deleted and customers report deployments as part of them: versions newest
/// first by name in byte order, parts in apply order, a prerelease replaced, a
/// stable version kept, who deployed a release, and each cell's release.
fn release_story<C: Sql>(conn: &C) -> Vec<String> {
    let mut answers = Vec::new();
    let mut record = |r: release_index::NewReleaseIndex| {
        answers.push(format!("{}", release_index::record(conn, &r).unwrap()));
    };
    record(release(
        "platform",
        "1.10.0",
        "p-1.10",
        &["web", "db", "Zcache"],
    ));
    record(release("platform", "1.9.0", "p-1.9", &["web"]));
    record(release("platform", "2.0.0-rc.1", "p-2rc1", &["web"]));
    // A moved prerelease tag replaces the record and its parts.
    record(release(
        "platform",
        "2.0.0-rc.1",
        "p-2rc1-b",
        &["db", "web"],
    ));
    // A stable version never changes, nor does the same index pushed again.
    record(release("platform", "1.9.0", "p-1.9-b", &["db"]));
    record(release("platform", "1.10.0", "p-1.10", &["web"]));
    record(release("Zeta-edge", "0.1.0", "z-0.1", &["web"]));
    record(release("data_plane", "3.0.0", "d-3", &["db"]));
    for name in [None, Some("platform"), Some("nothing")] {
        let versions = release_index::versions(conn, name).unwrap();
        answers.push(format!("{name:?}: {versions:?}"));
    }
    for (name, version) in [
        ("platform", "1.10.0"),
        ("platform", "2.0.0-rc.1"),
        ("platform", "1.9.0"),
        ("platform", "9.9.9"),
    ] {
        answers.push(format!(
            "{name} {version}: {:?} {:?} {:?}",
            release_index::version(conn, name, version).unwrap(),
            release_index::stacks(conn, name, version).unwrap(),
            release_index::services(conn, name, version).unwrap(),
        ));
    }
    // Deleting an index's manifest forgets the versions it recorded, parts too.
    let gone = index_digest("d-3").to_string();
    release_index::delete_by_digest(conn, "acme/releases/data_plane", &gone).unwrap();
    release_index::delete_by_digest(conn, "acme/releases/platform", &gone).unwrap();
    answers.push(format!(
        "{:?}",
        release_index::versions(conn, None).unwrap()
    ));
    answers.push(format!(
        "{:?}",
        release_index::stacks(conn, "data_plane", "3.0.0").unwrap()
    ));
    // Customers deploy (receipts and cells written by `ledger` and `fleet`, not
    // ported yet), some as part of a release.
    let now = "2026-03-02T00:00:00Z";
    for id in ["acme", "Zeta-1", "globex"] {
        ledger::register_customer(conn, id, None, None, now).unwrap();
    }
    customers::set_details(
        conn,
        "acme",
        &customers::Details {
            environment: Some("production".into()),
            ..Default::default()
        },
        now,
    )
    .unwrap();
    let platform = index_digest("p-1.10").to_string();
    for (id, customer, stack, release, finished_ns) in [
        ("r1", "acme", "web", Some("platform"), 30),
        ("r2", "acme", "db", Some("platform"), 20),
        ("r3", "acme", "Zcache", None, 10),
        ("r4", "Zeta-1", "web", Some("platform"), 40),
        ("r5", "globex", "web", Some("Zeta-edge"), 50),
    ] {
        let (version, digest) = (release.map(|_| "1.10.0"), release.map(|_| &*platform));
        conn.execute(
            "INSERT INTO receipts (id, customer, stack, version, digest, kind, outcome,
                 started_at, finished_at, key_id, document, received_at, finished_ns,
                 release_name, release_version, release_digest)
             VALUES ($1, $2, $3, '1.2.0', $6, 'apply', 'succeeded', $7, $7, 'k1', '{}', $7,
                 $8, $4, $5, $9)",
            &[
                id.into(),
                customer.into(),
                stack.into(),
                release.into(),
                version.into(),
                index_digest(stack).to_string().as_str().into(),
                now.into(),
                finished_ns.into(),
                digest.into(),
            ],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO fleet_cells (customer, stack, current_id, attempt_id, version, digest)
             VALUES ($1, $2, $3, $3, '1.2.0', $4)",
            &[
                customer.into(),
                stack.into(),
                id.into(),
                index_digest(stack).to_string().as_str().into(),
            ],
        )
        .unwrap();
    }
    for name in ["platform", "Zeta-edge", "nothing"] {
        let customers = release_index::customers_of(conn, name).unwrap();
        answers.push(format!("{name}: {customers:?}"));
    }
    for customer in ["acme", "Zeta-1", "nobody"] {
        let cells = release_index::cells(conn, customer).unwrap();
        answers.push(format!("{customer}: {cells:?}"));
    }
    answers
}

#[test]
fn releases_answer_the_same_on_sqlite_and_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("registry.db");
    drop(Db::open(&path, 1).unwrap());
    let mut connection = rusqlite::Connection::open(&path).unwrap();
    let tx = connection.transaction().unwrap();
    let sqlite = release_story(&tx);
    tx.commit().unwrap();

    // On an ICU en-US database, where names and stacks would otherwise sort with
    // case and punctuation set aside.
    let server = Postgres::start();
    let mut admin = pg::connect(&server.url()).unwrap();
    admin
        .batch_execute(
            "CREATE DATABASE releases TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US'",
        )
        .unwrap();
    let url = server.url().replace("/postgres", "/releases");
    let mut client = pg::connect(&url).unwrap();
    pg::migrate(&mut client).unwrap();
    let tx = Pg::new(client.transaction().unwrap());
    let postgres = release_story(&tx);
    tx.into_inner().commit().unwrap();

    for (i, (s, p)) in sqlite.iter().zip(&postgres).enumerate() {
        assert_eq!(s, p, "answer {i} differs");
    }
    assert_eq!(sqlite.len(), postgres.len());
    // And the answers are the ones the release pages rely on.
    assert_eq!(
        sqlite[..8],
        ["true", "true", "true", "true", "false", "false", "true", "true"]
    );
    let names = |answer: &str| -> Vec<String> {
        answer
            .split("name: \"")
            .skip(1)
            .map(|s| s.split('"').next().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        names(&sqlite[8]),
        [
            "Zeta-edge",
            "data_plane",
            "platform",
            "platform",
            "platform"
        ]
    );
    let versions: Vec<&str> = sqlite[9]
        .split("version: Version { major: ")
        .skip(1)
        .map(|s| s.split(',').next().unwrap())
        .collect();
    assert_eq!(versions, ["2", "1", "1"], "{}", sqlite[9]);
    assert!(
        sqlite[9].contains("minor: 10") && sqlite[9].find("minor: 10") < sqlite[9].find("minor: 9")
    );
    // The moved prerelease lists its new parts, in apply order.
    assert!(
        sqlite[12].contains("stack: \"db\"")
            && sqlite[12].find("\"db\"") < sqlite[12].find("\"web\""),
        "{}",
        sqlite[12]
    );
    // The stable version kept its first record: its one stack, not the second push's.
    assert!(
        sqlite[13].contains("web-image") && !sqlite[13].contains("\"db\""),
        "{}",
        sqlite[13]
    );
    assert_eq!(
        names(&sqlite[15]),
        ["Zeta-edge", "platform", "platform", "platform"]
    );
    assert_eq!(sqlite[16], "[]");
    assert_eq!(sqlite[17], "platform: [\"Zeta-1\", \"acme\"]");
    assert_eq!(sqlite[19], "nothing: []");
    let stacks: Vec<&str> = sqlite[20]
        .split("stack: \"")
        .skip(1)
        .map(|s| s.split('"').next().unwrap())
        .collect();
    // Byte order: on en-US "Zcache" would come last.
    assert_eq!(stacks, ["Zcache", "db", "web"], "{}", sqlite[20]);
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
    // The watchdog looks once a second; a loaded machine (two cores shared by a
    // whole test run) may take many seconds more to stop a server and remove its
    // folder.
    let deadline = Instant::now() + Duration::from_secs(90);
    while pg::connect(&url).is_ok() || std::path::Path::new(cluster).exists() {
        assert!(
            Instant::now() < deadline,
            "the killed test's cluster still runs (or its folder {cluster} is left)"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A watchdog that starts only after its test was killed (a loaded machine may be
/// that slow to run a shell script) still knows its owner by the start time it was
/// given, finds it gone, and stops the cluster: before, it saw no owner to watch,
/// gave up, and left the cluster running.
#[test]
fn a_watchdog_started_after_its_owner_died_still_stops_the_cluster() {
    use std::time::{Duration, Instant};
    let server = Postgres::start();
    let mut owner = std::process::Command::new("sleep")
        .arg("600")
        .spawn()
        .unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", owner.id())).unwrap();
    let start_time = stat[stat.rfind(')').unwrap() + 2..]
        .split(' ')
        .nth(19)
        .unwrap()
        .to_string();
    owner.kill().unwrap();
    owner.wait().unwrap();

    let status = std::process::Command::new(
        stackpack_test_support::repository_root().join("scripts/postgres-watchdog.sh"),
    )
    .arg(owner.id().to_string())
    .arg(start_time)
    .arg(server.dir())
    .status()
    .unwrap();
    assert!(status.success(), "{status}");
    let deadline = Instant::now() + Duration::from_secs(60);
    while pg::connect(&server.url()).is_ok() || server.dir().exists() {
        assert!(
            Instant::now() < deadline,
            "the dead owner's cluster still runs (or its folder is left)"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// What a backend-neutral `Db` closure sees on PostgreSQL: a statement the server
/// refuses names the server's message and SQLSTATE (not just "db error") and is a
/// 500; a server that is gone is a 503 Service Unavailable, so clients retry and the
/// replica recovers by reconnecting.
#[test]
fn a_refused_statement_names_the_server_message_and_a_lost_server_answers_503() {
    use stackpack_registry::db::sql::{Conn, SqlError};
    use stackpack_registry::error::Error;
    let server = Postgres::start();
    let pg = Pg::new(pg::connect(&server.url()).unwrap());
    let conn = Conn::Postgres(&pg);

    let refused: SqlError = conn.query("SELECT * FROM nowhere", &[]).unwrap_err();
    let shown = refused.to_string();
    assert!(
        shown.contains("relation \"nowhere\" does not exist"),
        "{shown}"
    );
    assert!(shown.contains("SQLSTATE 42P01"), "{shown}");
    assert!(!refused.is_unavailable(), "{shown}");
    let answered = Error::from(refused);
    assert_eq!(answered.status().as_u16(), 500);

    drop(server);
    let lost = conn.query("SELECT 1", &[]).unwrap_err();
    assert!(lost.is_unavailable(), "{lost} / {lost:?}");
    let answered = Error::from(lost);
    assert_eq!(answered.status().as_u16(), 503, "{}", answered.message);
}
