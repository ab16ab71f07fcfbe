//! Forecasts over the real registry: the packager's forecast is stored and read
//! back; the registry says whom to forecast from where (customers at three running
//! versions, one passing through a required version); a real plan that differs from
//! its forecast halts the rollout naming the resource and telling the customer's
//! hand from a wrong forecast, a matching one does not, `resume` acknowledges; a
//! destructive forecast holds the assignment for a person.

use crate::common::*;
use crate::rollout::{promote, push_release, release, release_receipt, statement, Fleet};
use crate::ui::{get, html, sign_in};
use stackpack_schema::forecast::{
    CustomerForecast, ForecastOutcome, ForecastTargets, ForecastView, ReleaseForecast,
    StackForecast, FORECAST_FORMAT,
};
use stackpack_schema::plan::{self, Action, PlannedChange, ResourceChange};
use stackpack_schema::receipt::{Outcome, ReceiptKind, SignedReceipt};
use stackpack_schema::rollout::{Approve, ApprovedKind, SyncReport};
use stackpack_schema::signature::PrivateKey;
use stackpack_schema::Digest;
use stackpack_test_support::receipts::ReceiptBuilder;

/// The key `release_receipt` signs with: one installation per customer.
fn key(customer: &str) -> PrivateKey {
    PrivateKey::from_secret_bytes([customer.len() as u8 + 1; 32])
}

fn change(address: &str, action: Action) -> ResourceChange {
    ResourceChange {
        address: address.into(),
        kind: address.split('.').next().unwrap().into(),
        action,
        attributes: vec![],
    }
}

fn customer(id: &str, changes: Vec<ResourceChange>) -> CustomerForecast {
    let planned: Vec<PlannedChange> = changes.iter().map(PlannedChange::from).collect();
    let outcome = ForecastOutcome::of(changes.iter().map(|c| &c.action));
    CustomerForecast {
        customer: id.into(),
        wave: Some("canary".into()),
        running: None,
        through: vec![],
        outcome,
        stacks: vec![StackForecast {
            stack: "network".into(),
            from: Some("1.0.0".parse().unwrap()),
            from_digest: None,
            to: "1.0.0".parse().unwrap(),
            to_digest: Digest::of(b"network"),
            outcome,
            changes_digest: plan::changes_digest(&planned),
            changes,
            stateful: vec![],
        }],
        inputs_set: vec!["name".into()],
        reason: None,
        cached: false,
        seconds: 1.5,
    }
}

fn forecast(version: &str, customers: Vec<CustomerForecast>) -> ReleaseForecast {
    ReleaseForecast {
        format: FORECAST_FORMAT,
        kind: ApprovedKind::Release,
        release: "platform".into(),
        version: version.parse().unwrap(),
        digest: release(version).index.digest,
        channel: Some("stable".into()),
        created_at: "2027-01-15T08:00:00Z".into(),
        account: "emulator `http://127.0.0.1:5000`".into(),
        customers,
    }
}

fn put(client: &Client, path: &str, forecast: &ReleaseForecast) -> Resp {
    client.req(
        "PUT",
        path,
        &[("Content-Type", "application/json")],
        Some(&serde_json::to_vec(forecast).unwrap()),
    )
}

/// A plan receipt of stack `network` made for `platform@version`, with its changes.
fn plan_receipt(
    customer: &str,
    id: &str,
    version: &str,
    changes: &[(&str, Action)],
    drifted: &[&str],
) -> SignedReceipt {
    let mut receipt = ReceiptBuilder::new(customer, "network", "1.0.0")
        .id(id)
        .kind(ReceiptKind::Plan, Outcome::Succeeded)
        .release("platform", version, release(version).index.digest)
        .build();
    receipt.changes = changes
        .iter()
        .map(|(address, action)| PlannedChange {
            address: address.to_string(),
            action: *action,
        })
        .collect();
    receipt.changes_digest = Some(plan::changes_digest(&receipt.changes));
    receipt.drifted = drifted.iter().map(|a| a.to_string()).collect();
    SignedReceipt::sign(receipt, &key(customer))
}

fn post_receipt(client: &Client, signed: &SignedReceipt) -> Resp {
    let r = client.req("POST", "/api/v1/receipts", &[], Some(&signed.to_bytes()));
    assert!(
        r.status == 201 || r.status == 200,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    r
}

#[test]
fn a_forecast_is_stored_replaced_and_read_back_by_publish_and_support_only() {
    let server = OurRegistry::start();
    let publisher = Client::new(server.url(), Some(server.publisher_token()));
    let support = Client::new(server.url(), Some(server.token("support", None)));
    let path = "/api/v1/forecasts/platform/1.1.0";

    let missing = support.req("GET", path, &[], None);
    assert_eq!(missing.status, 404);
    assert!(
        String::from_utf8_lossy(&missing.body).contains("no forecast of `platform@1.1.0`"),
        "{}",
        String::from_utf8_lossy(&missing.body)
    );

    let first = forecast("1.1.0", vec![customer("acme", vec![])]);
    assert_eq!(put(&publisher, path, &first).status, 204);
    let second = forecast(
        "1.1.0",
        vec![
            customer("acme", vec![change("aws_vpc.main", Action::Update)]),
            customer("globex", vec![]),
        ],
    );
    assert_eq!(put(&publisher, path, &second).status, 204, "replaces");
    let r = support.req("GET", path, &[], None);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let view: ForecastView = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(view.forecast, second);
    assert_eq!(view.summary, second.summary());
    assert!(view.misses.is_empty());
    assert_eq!(publisher.req("GET", path, &[], None).status, 200);

    // The body's release and version must be the path's.
    let elsewhere = put(&publisher, "/api/v1/forecasts/platform/1.2.0", &second);
    assert_eq!(elsewhere.status, 400);
    let message = String::from_utf8_lossy(&elsewhere.body).to_string();
    assert!(
        message.contains("`platform@1.1.0`") && message.contains("`platform@1.2.0`"),
        "{message}"
    );
    let garbage = publisher.req("PUT", path, &[], Some(b"{\"format\":1}"));
    assert_eq!(garbage.status, 400);

    // Support reads but does not publish; a customer does neither; nobody anonymous.
    assert_eq!(put(&support, path, &second).status, 403);
    let acme = Client::new(server.url(), Some(server.token("customer", Some("acme"))));
    assert_eq!(acme.req("GET", path, &[], None).status, 403);
    assert_eq!(put(&acme, path, &second).status, 403);
    let anonymous = Client::new(server.url(), None);
    assert_eq!(anonymous.req("GET", path, &[], None).status, 401);
    assert_eq!(
        anonymous
            .req(
                "GET",
                "/api/v1/forecast-targets?release=platform&version=1.1.0",
                &[],
                None
            )
            .status,
        401
    );
}

/// A fleet whose customers run three versions of `platform` (1.1.0 promoted as
/// required), and 2.0.0 pushed but not promoted.
fn three_versions() -> Fleet {
    let fleet = Fleet::start(
        "1h",
        &[
            ("acme", Some("early")),
            ("globex", Some("canary")),
            ("initech", Some("canary")),
        ],
    );
    for version in ["1.0.0", "1.1.0", "1.2.0", "2.0.0"] {
        push_release(&fleet.publisher, &release(version));
    }
    for (version, required) in [("1.0.0", false), ("1.1.0", true), ("1.2.0", false)] {
        let artifacts = release(version);
        let r = promote(
            &fleet.publisher,
            &statement(&artifacts, required),
            &artifacts,
        );
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    }
    for (customer, version) in [("acme", "1.0.0"), ("globex", "1.1.0"), ("initech", "1.2.0")] {
        let client = fleet.customer(customer);
        let stack = ReceiptBuilder::new(customer, "network", "1.0.0")
            .id(format!("{customer}-network"))
            .release("platform", version, release(version).index.digest)
            .sign(&key(customer));
        post_receipt(&client, &stack);
        fleet.report(
            &client,
            &release_receipt(
                customer,
                &format!("{customer}-r"),
                version,
                Outcome::Succeeded,
            ),
        );
    }
    fleet
}

#[test]
fn targets_say_what_each_customer_runs_and_the_required_versions_on_its_way() {
    let fleet = three_versions();
    // globex destroyed its network: it runs nothing of it.
    let globex = fleet.customer("globex");
    let destroyed = ReceiptBuilder::new("globex", "network", "1.0.0")
        .id("globex-destroy")
        .kind(ReceiptKind::Destroy, Outcome::Succeeded)
        .at("2026-03-01T00:00:00Z")
        .sign(&key("globex"));
    post_receipt(&globex, &destroyed);
    let report = SyncReport {
        customer: "initech".into(),
        started_at: "2027-01-15T08:00:00Z".into(),
        finished_at: "2027-01-15T08:00:01Z".into(),
        releases: vec![],
        interrupted: None,
        approve: Some(Approve::Auto),
    };
    let r = fleet.customer("initech").req(
        "POST",
        "/api/v1/customers/initech/sync",
        &[],
        Some(&serde_json::to_vec(&report).unwrap()),
    );
    assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));

    let support = fleet.customer("acme");
    let refused = support.req(
        "GET",
        "/api/v1/forecast-targets?release=platform&version=2.0.0",
        &[],
        None,
    );
    assert_eq!(refused.status, 403, "a customer token reads no targets");
    let r = fleet.publisher.req(
        "GET",
        "/api/v1/forecast-targets?release=platform&version=2.0.0&channel=stable",
        &[],
        None,
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let targets: ForecastTargets = serde_json::from_slice(&r.body).unwrap();
    let seen: Vec<(&str, Option<String>, Vec<String>, usize)> = targets
        .customers
        .iter()
        .map(|t| {
            (
                t.customer.as_str(),
                t.running.as_ref().map(|v| v.to_string()),
                t.through.iter().map(|v| v.to_string()).collect(),
                t.stacks.len(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("acme", Some("1.0.0".into()), vec!["1.1.0".to_string()], 1),
            ("globex", Some("1.1.0".into()), vec![], 0),
            ("initech", Some("1.2.0".into()), vec![], 1),
        ]
    );
    let acme = &targets.customers[0];
    assert_eq!(
        (acme.channel.as_deref(), acme.wave.as_deref(), acme.approve),
        (Some("stable"), Some("early"), None)
    );
    assert_eq!(acme.stacks[0].version.to_string(), "1.0.0");
    assert_eq!(acme.stacks[0].digest, Digest::of(b"1.0.0"));
    assert_eq!(targets.customers[2].approve, Some(Approve::Auto));

    let missing = fleet.publisher.req(
        "GET",
        "/api/v1/forecast-targets?release=platform",
        &[],
        None,
    );
    assert_eq!(missing.status, 400);
    assert!(String::from_utf8_lossy(&missing.body).contains("`version` is missing"));
}

#[test]
fn a_real_plan_that_misses_its_forecast_halts_the_rollout_naming_the_resource() {
    let fleet = three_versions();
    let node_group = change("aws_eks_node_group.system", Action::Replace);
    let sent = forecast(
        "2.0.0",
        vec![
            customer("globex", vec![]),
            customer("initech", vec![node_group]),
        ],
    );
    let r = put(&fleet.publisher, "/api/v1/forecasts/platform/2.0.0", &sent);
    assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));
    let v2 = release("2.0.0");
    let r = promote(&fleet.publisher, &statement(&v2, false), &v2);
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let (globex, initech) = (fleet.customer("globex"), fleet.customer("initech"));

    // A destructive forecast holds initech's assignment whatever its policy.
    let held = fleet.assignment(&initech, "initech");
    let a = &held.assignments[0];
    assert_eq!(a.version.to_string(), "2.0.0");
    let rollout = a.rollout;
    assert_eq!(
        a.hold.as_deref(),
        Some("the vendor's forecast replaces `network: aws_eks_node_group.system`: held for a person whatever `[sync] approve` says")
    );
    assert_eq!(
        fleet.assignment(&globex, "globex").assignments[0].hold,
        None
    );

    // initech's real plan matches: nothing halts.
    let matching = plan_receipt(
        "initech",
        "initech-plan",
        "2.0.0",
        &[("aws_eks_node_group.system", Action::Replace)],
        &[],
    );
    post_receipt(&initech, &matching);
    assert_eq!(fleet.rollout(rollout)["rollout"]["state"], "running");

    // globex's plan updates a resource the forecast left alone: halted, named.
    let differs = plan_receipt(
        "globex",
        "globex-plan",
        "2.0.0",
        &[("aws_vpc.main", Action::Update)],
        &[],
    );
    post_receipt(&globex, &differs);
    post_receipt(&globex, &differs);
    let r = fleet
        .admin
        .req("GET", &format!("/api/v1/rollouts/{rollout}"), &[], None);
    let shown = r.json();
    assert_eq!(shown["rollout"]["state"], "halted", "{shown}");
    let reason = shown["rollout"]["haltedReason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        reason.contains("forecast missed: globex: update `aws_vpc.main`, forecast said no change"),
        "{reason}"
    );
    assert!(!reason.contains("outside the runner"), "{reason}");
    assert_eq!(shown["forecast"], sent.summary());
    assert_eq!(
        shown["misses"].as_array().unwrap().len(),
        1,
        "posted twice, one miss"
    );
    assert_eq!(shown["misses"][0]["receiptId"], "globex-plan");

    // resume acknowledges the miss: running again.
    let r = fleet.admin.req(
        "POST",
        &format!("/api/v1/rollouts/{rollout}/resume"),
        &[],
        None,
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["state"], "running");

    // A new miss on a resource changed by hand halts again, and says so.
    let drifted = plan_receipt(
        "globex",
        "globex-plan-2",
        "2.0.0",
        &[("aws_vpc.main", Action::Replace)],
        &["aws_vpc.main"],
    );
    post_receipt(&globex, &drifted);
    let shown = fleet.rollout(rollout);
    assert_eq!(shown["rollout"]["state"], "halted");
    let reason = shown["rollout"]["haltedReason"].as_str().unwrap();
    assert!(
        reason.contains("replace `aws_vpc.main`, forecast said no change (changed outside the runner before the upgrade)"),
        "{reason}"
    );
    let view: ForecastView = serde_json::from_slice(
        &fleet
            .publisher
            .req("GET", "/api/v1/forecasts/platform/2.0.0", &[], None)
            .body,
    )
    .unwrap();
    assert_eq!(view.misses.len(), 2);
    assert!(view.misses[1].explained_by_drift());

    // The pages show the forecast, each customer's outcome and the misses, escaped.
    let cookie = sign_in(&fleet.server, &fleet.server.token("support", None));
    let page = html(&get(
        &fleet.server,
        &format!("/ui/rollouts/{rollout}"),
        &cookie,
    ));
    assert!(page.contains("id=\"forecast-summary\""), "{page}");
    assert!(
        page.contains("network: replace aws_eks_node_group.system"),
        "{page}"
    );
    assert!(
        page.contains("changed by hand") && page.contains("forecast wrong"),
        "{page}"
    );
    let page = html(&get(&fleet.server, "/ui/customers/globex", &cookie));
    assert!(
        page.contains("Forecast misses") && page.contains("globex-plan-2"),
        "{page}"
    );
    assert!(page.contains("`aws_vpc.main`") || page.contains("aws_vpc.main"));
}

/// Support reads a halted rollout the way people do, in a browser: the rollouts
/// index, the rollout with its forecast and its miss, and the release version it
/// rolls out, each readable at 1280 px without scrolling sideways.
#[test]
fn headless_chromium_reads_a_halted_rollout_its_forecast_and_its_miss_at_1280_px() {
    use crate::ui::{Browser, Driver};
    if !have("chromedriver") || !have("chromium") {
        return;
    }
    let fleet = three_versions();
    let sent = forecast(
        "2.0.0",
        vec![
            customer("globex", vec![]),
            customer(
                "initech",
                vec![change("aws_eks_node_group.system", Action::Replace)],
            ),
        ],
    );
    assert_eq!(
        put(&fleet.publisher, "/api/v1/forecasts/platform/2.0.0", &sent).status,
        204
    );
    let v2 = release("2.0.0");
    assert_eq!(
        promote(&fleet.publisher, &statement(&v2, false), &v2).status,
        201
    );
    let globex = fleet.customer("globex");
    let rollout = fleet.assignment(&globex, "globex").assignments[0].rollout;
    let differs = plan_receipt(
        "globex",
        "globex-plan",
        "2.0.0",
        &[("aws_vpc.main", Action::Update)],
        &[],
    );
    post_receipt(&globex, &differs);

    let driver = Driver::start();
    let browser = Browser::start(&driver, (1280, 900));
    let fits = |page: &str| {
        let width = browser.script("return document.documentElement.scrollWidth");
        assert!(
            width.as_u64().unwrap() <= 1280,
            "{page} is {width} px wide at a 1280 px window"
        );
    };
    let base = fleet.server.url();
    browser.go(&format!("{base}/ui/login"));
    browser.type_into("#token", &fleet.server.token("support", None));
    browser.click("button[type=submit]");
    browser.url_when(|u| u.ends_with("/ui"));

    browser.go(&format!("{base}/ui/rollouts"));
    let body = browser.text(&browser.find("body"));
    assert!(
        body.contains("platform") && body.contains("halted"),
        "{body}"
    );
    fits("/ui/rollouts");

    browser.go(&format!("{base}/ui/rollouts/{rollout}"));
    assert_eq!(browser.text(&browser.find("#state")), "halted");
    let halted = browser.text(&browser.find("#halted"));
    // The page sets names in `<code>`, so the reader sees them without backticks.
    assert!(
        halted.contains("globex: update aws_vpc.main, forecast said no change"),
        "{halted}"
    );
    let summary = browser.text(&browser.find("#forecast-summary"));
    assert!(summary.contains("aws_eks_node_group.system"), "{summary}");
    fits("/ui/rollouts/ID");
    browser.screenshot("rollout-miss");

    browser.go(&format!("{base}/ui/releases/platform/2.0.0"));
    let body = browser.text(&browser.find("body"));
    assert!(body.contains("2.0.0"), "{body}");
    fits("/ui/releases/platform/2.0.0");
}
