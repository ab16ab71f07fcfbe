//! Support's list answers come a page at a time (`limit`, `after`, `Link`), and the
//! CLI follows the pages so scripts still get the whole answer; `behind` stays right
//! as stable releases arrive after the receipts, and never counts a prerelease.

use crate::common;

use std::process::Command;

use common::*;
use stackpack_schema::receipt::SignedReceipt;
use stackpack_schema::signature::PrivateKey;
use stackpack_test_support::receipts::ReceiptBuilder;

fn receipt(
    customer: &str,
    id: &str,
    stack: &str,
    version: &str,
    minutes_ago: i64,
) -> SignedReceipt {
    let at = (time::OffsetDateTime::now_utc() - time::Duration::minutes(minutes_ago))
        .replace_nanosecond(0)
        .unwrap()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let mut secret = [7u8; 32];
    secret[..customer.len().min(32)]
        .copy_from_slice(&customer.as_bytes()[..customer.len().min(32)]);
    ReceiptBuilder::new(customer, stack, version)
        .id(id)
        .at(&at)
        .sign(&PrivateKey::from_secret_bytes(secret))
}

/// Imports receipts as `receipts import` does, all in one file.
fn import(server: &OurRegistry, receipts: &[SignedReceipt]) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("receipts.jsonl");
    let mut lines = Vec::new();
    for signed in receipts {
        lines.extend(signed.to_bytes());
        lines.push(b'\n');
    }
    std::fs::write(&file, lines).unwrap();
    register_customers(server, receipts.iter().map(|r| r.receipt.customer.as_str()));
    let mut args = vec!["receipts", "import", file.to_str().unwrap()];
    for signed in receipts {
        args.extend(["--customer", signed.receipt.customer.as_str()]);
    }
    let out = cli(server, &args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn publish(server: &OurRegistry, stack: &str, version: &str) {
    let publisher = Client::new(server.url(), Some(server.token("publisher", None)));
    let body = serde_json::json!({
        "stack": stack, "version": version, "digest": sha256(version.as_bytes()),
        "repository": format!("ecr.example/acme/{stack}"),
    });
    let r = publisher.req(
        "POST",
        "/api/v1/releases",
        &[],
        Some(&serde_json::to_vec(&body).unwrap()),
    );
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
}

fn cells(rows: &serde_json::Value) -> Vec<String> {
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{}:{}",
                r["customer"].as_str().unwrap(),
                r["stack"].as_str().unwrap_or("-")
            )
        })
        .collect()
}

/// `acme` runs three stacks, `bolt` two, `crane` never reported.
fn small_fleet(server: &OurRegistry) {
    let mut receipts = Vec::new();
    for (customer, stacks) in [
        ("acme", &["api", "db", "web"][..]),
        ("bolt", &["api", "db"][..]),
    ] {
        for (n, stack) in stacks.iter().enumerate() {
            receipts.push(receipt(
                customer,
                &format!("{customer}-{n}"),
                stack,
                "1.0.0",
                10,
            ));
        }
    }
    import(server, &receipts);
    let out = cli(
        server,
        &["customer", "add", "crane", "--environment", "production"],
    );
    assert!(out.status.success());
}

#[test]
fn fleet_pages_break_inside_a_customers_stacks_and_link_to_the_next_until_the_last_row() {
    let server = OurRegistry::start();
    small_fleet(&server);
    let support = Client::new(server.url(), Some(server.token("support", None)));

    let mut path = "/api/v1/fleet?staleAfter=7d&limit=2".to_string();
    let mut pages = Vec::new();
    loop {
        let r = support.req("GET", &path, &[], None);
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        pages.push(cells(&r.json()));
        let Some(link) = r.header("link") else { break };
        let next = link
            .strip_prefix('<')
            .and_then(|l| l.strip_suffix(">; rel=\"next\""))
            .unwrap_or_else(|| panic!("a next link: {link}"));
        assert!(
            next.contains("staleAfter=7d") && next.contains("limit=2"),
            "{next}"
        );
        path = next.to_string();
    }
    assert_eq!(
        pages,
        [
            vec!["acme:api", "acme:db"],
            vec!["acme:web", "bolt:api"],
            vec!["bolt:db", "crane:-"],
        ],
        "the second page starts in the middle of acme's stacks; the last has no link"
    );
    assert!(path.contains("after=bolt%2Fapi"), "{path}");

    let whole = support.req("GET", "/api/v1/fleet", &[], None);
    assert_eq!(
        cells(&whole.json()),
        pages.concat(),
        "pages add up to the whole"
    );
    assert!(whole.header("link").is_none());

    // A cursor after the last row: an empty page, no link.
    let after_last = support.req("GET", "/api/v1/fleet?after=crane/", &[], None);
    assert_eq!(after_last.status, 200);
    assert_eq!(after_last.json(), serde_json::json!([]));
    assert!(after_last.header("link").is_none());
    // Filters page the same way: a cursor inside a customer's stacks.
    let r = support.req("GET", "/api/v1/fleet?stack=api&after=acme/db", &[], None);
    assert_eq!(cells(&r.json()), ["bolt:api"]);

    for (query, says) in [
        ("limit=2001", "`limit` is at most 2000, not `2001`"),
        (
            "limit=0",
            "`limit` takes a number of rows from 1 to 2000, not `0`",
        ),
        ("limit=many", "not `many`"),
        (
            "after=acme",
            "`after` takes the last row of the previous page as `customer/stack`",
        ),
    ] {
        let r = support.req("GET", &format!("/api/v1/fleet?{query}"), &[], None);
        assert_eq!(r.status, 400, "{query}");
        let body = String::from_utf8_lossy(&r.body);
        assert!(body.contains(says), "{query}: {body}");
    }
}

#[test]
fn support_lists_customers_and_history_page_with_links() {
    let server = OurRegistry::start();
    small_fleet(&server);
    let support = Client::new(server.url(), Some(server.token("support", None)));

    let first = support.req("GET", "/api/v1/support/versions?limit=3", &[], None);
    let rows = first.json();
    assert_eq!(rows.as_array().unwrap().len(), 3);
    assert_eq!(rows[2]["customer"], "acme");
    assert_eq!(rows[2]["stack"], "web");
    let link = first.header("link").expect("more follow");
    assert!(
        link.contains("/api/v1/support/versions?limit=3&after=acme%2Fweb"),
        "{link}"
    );
    let rest = support.req(
        "GET",
        "/api/v1/support/versions?limit=3&after=acme/web",
        &[],
        None,
    );
    let rest = rest.json();
    assert_eq!(rest.as_array().unwrap().len(), 2, "{rest}");
    assert_eq!(rest[0]["customer"], "bolt");

    let customers = support.req("GET", "/api/v1/customers?limit=2", &[], None);
    let ids: Vec<_> = customers
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].clone())
        .collect();
    assert_eq!(ids, ["acme", "bolt"]);
    assert!(customers.header("link").unwrap().contains("after=bolt"));
    let last = support.req("GET", "/api/v1/customers?limit=2&after=bolt", &[], None);
    assert_eq!(last.json()[0]["id"], "crane");
    assert!(last.header("link").is_none());

    let history = support.req("GET", "/api/v1/customers/acme/history?limit=2", &[], None);
    let first_two = history.json();
    assert_eq!(first_two.as_array().unwrap().len(), 2);
    let last_id = first_two[1]["receiptId"].as_str().unwrap().to_string();
    let link = history.header("link").expect("a third receipt follows");
    assert!(link.contains(&format!("after={last_id}")), "{link}");
    let third = support.req(
        "GET",
        &format!("/api/v1/customers/acme/history?limit=2&after={last_id}"),
        &[],
        None,
    );
    assert_eq!(third.json().as_array().unwrap().len(), 1);
}

#[test]
fn behind_counts_stable_releases_recorded_after_the_receipts_and_never_a_prerelease() {
    let server = OurRegistry::start();
    publish(&server, "api", "1.0.0");
    import(
        &server,
        &[
            receipt("acme", "a1", "api", "1.0.0", 10),
            receipt("bolt", "b1", "api", "1.1.0-rc.1", 10),
        ],
    );
    let support = Client::new(server.url(), Some(server.token("support", None)));
    let row = |customer: &str| {
        let rows = support
            .req(
                "GET",
                &format!("/api/v1/fleet?customer={customer}"),
                &[],
                None,
            )
            .json();
        rows[0].clone()
    };
    let behind = || {
        cells(
            &support
                .req("GET", "/api/v1/fleet?behind=true", &[], None)
                .json(),
        )
    };
    assert_eq!(row("acme")["behind"], 0);
    assert_eq!(row("bolt")["behind"], 0, "1.1.0-rc.1 is above 1.0.0");

    // A prerelease arrives: nobody is behind a prerelease.
    publish(&server, "api", "1.1.0-rc.1");
    assert_eq!(row("acme")["behind"], 0);
    assert_eq!(row("acme")["latestStable"], "1.0.0");
    assert!(behind().is_empty());

    // A stable release arrives after the receipts: both are behind it.
    publish(&server, "api", "1.1.0");
    assert_eq!(row("acme")["behind"], 1);
    assert_eq!(row("acme")["latestStable"], "1.1.0");
    assert_eq!(row("bolt")["behind"], 1, "1.1.0-rc.1 is below 1.1.0");
    assert_eq!(behind(), ["acme:api", "bolt:api"]);
    let listed = support
        .req("GET", "/api/v1/support/behind", &[], None)
        .json();
    assert_eq!(listed.as_array().unwrap().len(), 2, "{listed}");

    publish(&server, "api", "2.0.0");
    assert_eq!(row("acme")["behind"], 2);
    // The same stable version again changes nothing.
    publish(&server, "api", "2.0.0");
    assert_eq!(row("acme")["behind"], 2);
    // `below` compares by precedence, not as text: 1.1.0-rc.1 is below 1.1.0.
    let below = support
        .req("GET", "/api/v1/fleet?below=1.1.0", &[], None)
        .json();
    assert_eq!(cells(&below), ["acme:api", "bolt:api"]);
    let below = support
        .req("GET", "/api/v1/fleet?below=1.1.0-rc.1", &[], None)
        .json();
    assert_eq!(cells(&below), ["acme:api"]);

    // Upgrading clears it.
    import(&server, &[receipt("acme", "a2", "api", "2.0.0", 5)]);
    assert_eq!(row("acme")["behind"], 0);
    assert_eq!(behind(), ["bolt:api"]);
}

#[test]
fn fleet_and_customer_list_follow_every_page_so_json_is_the_whole_answer() {
    let server = OurRegistry::start();
    // 2,600 customers × 2 stacks: more rows than one page holds (2,000).
    let receipts: Vec<SignedReceipt> = (0..2600)
        .flat_map(|c| {
            let customer = format!("c{c:05}");
            ["api", "db"].map(|stack| {
                receipt(
                    &customer,
                    &format!("{customer}-{stack}"),
                    stack,
                    "1.0.0",
                    10,
                )
            })
        })
        .collect();
    import(&server, &receipts);
    let support = server.token("support", None);
    let over_url = Command::new(BIN)
        .args([
            "fleet",
            "--json",
            "--url",
            &server.url(),
            "--token",
            &support,
        ])
        .output()
        .unwrap();
    let over_url = json(&over_url);
    let local = json(&cli(&server, &["fleet", "--json"]));
    assert_eq!(over_url.as_array().unwrap().len(), 5200);
    assert_eq!(over_url, local);
    let names = cells(&local);
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(names, sorted, "by customer then stack, each once");

    let customers = json(&cli(&server, &["customer", "list", "--json"]));
    assert_eq!(customers.as_array().unwrap().len(), 2600);
    assert_eq!(customers[2599]["id"], "c02599");
}

#[test]
fn the_openapi_document_says_every_list_takes_limit_and_after() {
    let server = OurRegistry::start();
    let support = Client::new(server.url(), Some(server.token("support", None)));
    let api = support.req("GET", "/api/v1/openapi.json", &[], None).json();
    for path in [
        "/api/v1/fleet",
        "/api/v1/support/versions",
        "/api/v1/support/behind",
        "/api/v1/support/prerelease",
        "/api/v1/support/drifted",
        "/api/v1/customers",
        "/api/v1/customers/{id}/history",
    ] {
        let names: Vec<&str> = api["paths"][path]["get"]["parameters"]
            .as_array()
            .unwrap_or_else(|| panic!("{path} has parameters"))
            .iter()
            .filter_map(|p| p["name"].as_str())
            .collect();
        assert!(
            names.contains(&"limit") && names.contains(&"after"),
            "{path}: {names:?}"
        );
        let ok = &api["paths"][path]["get"]["responses"]["200"]["description"];
        assert!(ok.as_str().unwrap().contains("page"), "{path}: {ok}");
    }
}

/// Pushes a bundle of `stack` at `version` as the packager does; returns its digest.
fn push_bundle(client: &Client, stack: &str, version: &str) -> String {
    let config = serde_json::json!({
        "format": 1, "stack": stack, "version": version,
        "source": {"repository": "https://git.example/acme/infra", "commit": "c0ffee", "branch": "main"},
        "created": "2026-01-01T00:00:00Z",
        "engine": {"name": "tofu"},
        "entrypoint": format!("stacks/{stack}"),
        "interface": {"inputs": [], "outputs": [], "resourceKinds": []},
        "modules": [],
        "files": [],
    });
    let repo = format!("acme/stacks/{stack}");
    client
        .push_bundle_config(&repo, version, &serde_json::to_vec(&config).unwrap())
        .1
}

#[test]
fn deleting_a_stable_release_takes_it_out_of_everyones_behind_count() {
    let server = OurRegistry::start();
    let publisher = Client::new(server.url(), Some(server.token("publisher", None)));
    push_bundle(&publisher, "api", "1.0.0");
    let newer = push_bundle(&publisher, "api", "2.0.0");
    import(&server, &[receipt("acme", "a1", "api", "1.0.0", 10)]);
    let support = Client::new(server.url(), Some(server.token("support", None)));
    let row = || {
        support
            .req("GET", "/api/v1/fleet?customer=acme", &[], None)
            .json()[0]
            .clone()
    };
    assert_eq!(row()["behind"], 1);
    assert_eq!(row()["latestStable"], "2.0.0");

    let admin = Client::new(server.url(), Some(server.token("admin", None)));
    let r = admin.req(
        "DELETE",
        &format!("/v2/acme/stacks/api/manifests/{newer}"),
        &[],
        None,
    );
    assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(row()["behind"], 0, "2.0.0 is gone");
    assert_eq!(row()["latestStable"], "1.0.0");
    let behind = support
        .req("GET", "/api/v1/support/behind", &[], None)
        .json();
    assert_eq!(behind, serde_json::json!([]));
}
