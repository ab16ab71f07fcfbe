//! Rollouts over the real registry: the vendor's signed channel statement, pushed
//! as an OCI artifact beside the release, starts a rollout; customers are assigned
//! wave by wave on the registry's clock as their receipts keep the gate; a failure
//! halts it, `resume` re-reads the gate, `abort` stops it; statements that do not
//! verify, or approve what the registry does not hold, are refused.

use std::time::{Duration, Instant};

use crate::common;

use common::*;
use stackpack_bundle::channel::statement_artifact;
use stackpack_schema::media_type;
use stackpack_schema::receipt::{Outcome, ReceiptKind};
use stackpack_schema::release_receipt::{
    ReleaseReceipt, SignedReleaseReceipt, RELEASE_RECEIPT_FORMAT,
};
use stackpack_schema::rollout::{
    ApprovedKind, AssignmentResponse, ChannelStatement, SignedChannelStatement,
    CHANNEL_STATEMENT_FORMAT,
};
use stackpack_schema::signature::PrivateKey;
use stackpack_schema::Digest;
use stackpack_test_support::release_index::{ReleaseArtifacts, ReleaseBuilder};

const REPO: &str = "acme/releases/platform";

pub(crate) fn vendor() -> PrivateKey {
    stackpack_test_support::release_index::test_vendor_key()
}

pub(crate) fn release(version: &str) -> ReleaseArtifacts {
    ReleaseBuilder::new("platform", version)
        .stack("network", "1.0.0", &[])
        .build()
}

pub(crate) fn push_release(client: &Client, artifacts: &ReleaseArtifacts) {
    for blob in &artifacts.blobs {
        client.push_blob(REPO, blob);
    }
    for m in &artifacts.manifests {
        let r = client.push_manifest(REPO, &m.digest.to_string(), &m.bytes, m.media_type);
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    }
    let index = &artifacts.index;
    let version = artifacts.description.version.to_string();
    let r = client.push_manifest(REPO, &version, &index.bytes, index.media_type);
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
}

pub(crate) fn statement(artifacts: &ReleaseArtifacts, required: bool) -> SignedChannelStatement {
    SignedChannelStatement::sign(
        ChannelStatement {
            format: CHANNEL_STATEMENT_FORMAT,
            channel: "stable".into(),
            kind: ApprovedKind::Release,
            release: "platform".into(),
            version: artifacts.description.version.clone(),
            digest: artifacts.index.digest.clone(),
            required,
            promoted_at: "2027-01-15T08:00:00Z".into(),
            promoted_by: Some("ci <release job>".into()),
            key_id: String::new(),
        },
        &vendor(),
    )
}

/// Pushes a statement the way `stackpack promote` does: its layer and the empty
/// config, then the manifest by digest, subject the release index.
pub(crate) fn promote(
    client: &Client,
    signed: &SignedChannelStatement,
    artifacts: &ReleaseArtifacts,
) -> Resp {
    let (manifest, layer) = statement_artifact(signed, &artifacts.index.descriptor());
    client.push_blob(REPO, &layer);
    client.push_blob(REPO, media_type::EMPTY_BLOB);
    let bytes = manifest.to_bytes();
    client.push_manifest(REPO, &sha256(&bytes), &bytes, OCI_MANIFEST)
}

pub(crate) fn release_receipt(
    customer: &str,
    id: &str,
    version: &str,
    outcome: Outcome,
) -> SignedReleaseReceipt {
    let now = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    SignedReleaseReceipt::sign(
        ReleaseReceipt {
            format: RELEASE_RECEIPT_FORMAT,
            id: id.into(),
            customer: customer.into(),
            release: "platform".into(),
            version: version.parse().unwrap(),
            digest: release(version).index.digest,
            kind: ReceiptKind::Apply,
            outcome,
            stacks: Vec::new(),
            services: Vec::new(),
            started_at: now.clone(),
            finished_at: now,
            key_id: String::new(),
        },
        &PrivateKey::from_secret_bytes([customer.len() as u8 + 1; 32]),
    )
}

pub(crate) struct Fleet {
    pub(crate) server: OurRegistry,
    pub(crate) publisher: Client,
    pub(crate) admin: Client,
}

impl Fleet {
    /// A registry with customers in channel `stable` at the given waves.
    pub(crate) fn start(soak: &str, customers: &[(&str, Option<&str>)]) -> Fleet {
        Fleet::start_with(&[], soak, customers)
    }

    /// [`Fleet::start`], with extra `serve` arguments.
    fn start_with(args: &[&str], soak: &str, customers: &[(&str, Option<&str>)]) -> Fleet {
        let server = OurRegistry::start_with(args);
        cli_ok(&server, &["channel", "set", "stable", "--soak", soak]);
        for (id, wave) in customers {
            cli_ok(&server, &["customer", "add", id]);
            let mut args = vec!["customer", "set", id, "--channel", "stable"];
            if let Some(wave) = wave {
                args.extend(["--wave", wave]);
            }
            cli_ok(&server, &args);
        }
        let publisher = Client::new(server.url(), Some(server.publisher_token()));
        let admin = Client::new(server.url(), Some(server.token("admin", None)));
        Fleet {
            server,
            publisher,
            admin,
        }
    }

    pub(crate) fn customer(&self, id: &str) -> Client {
        Client::new(
            self.server.url(),
            Some(self.server.token("customer", Some(id))),
        )
    }

    pub(crate) fn assignment(&self, client: &Client, id: &str) -> AssignmentResponse {
        let r = client.req(
            "GET",
            &format!("/api/v1/customers/{id}/assignment"),
            &[],
            None,
        );
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        serde_json::from_slice(&r.body).unwrap()
    }

    pub(crate) fn report(&self, client: &Client, signed: &SignedReleaseReceipt) {
        let r = client.req(
            "POST",
            "/api/v1/release-receipts",
            &[],
            Some(&serde_json::to_vec(signed).unwrap()),
        );
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    }

    pub(crate) fn rollout(&self, id: i64) -> serde_json::Value {
        json(&cli_ok(
            &self.server,
            &["rollout", "show", &id.to_string(), "--json"],
        ))
    }

    /// Waits (up to 15 s) until `id`'s runner is assigned something.
    fn wait_for_assignment(&self, client: &Client, id: &str) -> AssignmentResponse {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let answer = self.assignment(client, id);
            if !answer.assignments.is_empty() || Instant::now() > deadline {
                return answer;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

#[test]
fn a_promotion_rolls_out_wave_by_wave_halts_on_a_failure_and_resumes() {
    let fleet = Fleet::start(
        "3s",
        &[
            ("acme", Some("canary")),
            ("globex", Some("early")),
            ("initech", Some("general")),
        ],
    );
    let artifacts = release("1.0.0");
    push_release(&fleet.publisher, &artifacts);
    let r = promote(&fleet.publisher, &statement(&artifacts, false), &artifacts);
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let (acme, globex, initech) = (
        fleet.customer("acme"),
        fleet.customer("globex"),
        fleet.customer("initech"),
    );

    // Wave 0 at once, with the vendor's statement the runner verifies.
    let answer = fleet.assignment(&acme, "acme");
    assert_eq!(
        (answer.channel.as_deref(), answer.wave.as_deref()),
        (Some("stable"), Some("canary"))
    );
    let a = &answer.assignments[0];
    assert_eq!(
        (a.release.as_str(), a.version.to_string()),
        ("platform", "1.0.0".to_string())
    );
    a.verify(&[vendor().public_key()], "stable")
        .expect("the assignment carries the vendor's approval");
    let rollout = a.rollout;
    assert!(fleet.assignment(&globex, "globex").assignments.is_empty());
    // Another customer's token may not read acme's assignment.
    let refused = globex.req("GET", "/api/v1/customers/acme/assignment", &[], None);
    assert_eq!(refused.status, 403);

    // acme succeeds: early opens only after the soak time.
    fleet.report(
        &acme,
        &release_receipt("acme", "acme-1", "1.0.0", Outcome::Succeeded),
    );
    assert!(
        fleet.assignment(&globex, "globex").assignments.is_empty(),
        "not before the soak"
    );
    let status = json(&cli_ok(&fleet.server, &["rollout", "status", "--json"]));
    assert!(status[0]["nextWaveAt"].is_string(), "{status}");
    let answer = fleet.wait_for_assignment(&globex, "globex");
    assert_eq!(answer.assignments.len(), 1, "early opened after the soak");

    // globex fails: halted, initech never assigned, support sees why.
    fleet.report(
        &globex,
        &release_receipt("globex", "globex-1", "1.0.0", Outcome::Failed),
    );
    let shown = fleet.rollout(rollout);
    assert_eq!(shown["rollout"]["state"], "halted");
    let reason = shown["rollout"]["haltedReason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        reason.contains("globex") && reason.contains("globex-1"),
        "{reason}"
    );
    std::thread::sleep(Duration::from_secs(4));
    assert!(fleet.assignment(&initech, "initech").assignments.is_empty());
    let table = String::from_utf8(cli_ok(&fleet.server, &["rollout", "status"]).stdout).unwrap();
    assert!(
        table.contains("halted") && table.contains("globex"),
        "{table}"
    );
    // Issue 39: who the halt holds up, and what to do once they succeed.
    let resume = format!("`stackpack-registry rollout resume {rollout}` goes on");
    assert!(
        table.contains(&format!(
            "rollout {rollout} halted: `globex` fails the gate; waiting: `initech`; once they succeed, {resume}"
        )),
        "{table}"
    );
    assert_eq!(
        fleet.rollout(rollout)["rollout"]["heldUp"],
        format!("`globex` fails the gate; waiting: `initech`; once they succeed, {resume}")
    );
    let cookie = crate::ui::sign_in(&fleet.server, &fleet.server.token("support", None));
    let page = crate::ui::html(&crate::ui::get(
        &fleet.server,
        &format!("/ui/rollouts/{rollout}"),
        &cookie,
    ));
    assert!(
        page.contains("<code>globex</code> fails the gate; waiting: <code>initech</code>"),
        "{page}"
    );

    // Resume while it still fails: halted again.
    let again = json(&cli_ok(
        &fleet.server,
        &["rollout", "resume", &rollout.to_string(), "--json"],
    ));
    assert_eq!(again["state"], "halted");

    // globex succeeds, resume: the last wave opens (early soaked long ago).
    fleet.report(
        &globex,
        &release_receipt("globex", "globex-2", "1.0.0", Outcome::Succeeded),
    );
    let shown =
        String::from_utf8(cli_ok(&fleet.server, &["rollout", "show", &rollout.to_string()]).stdout)
            .unwrap();
    assert!(
        shown.contains(&format!(
            "no assigned customer fails the gate any more: {resume}"
        )),
        "{shown}"
    );
    let r = fleet.admin.req(
        "POST",
        &format!("/api/v1/rollouts/{rollout}/resume"),
        &[],
        None,
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        fleet
            .wait_for_assignment(&initech, "initech")
            .assignments
            .len(),
        1
    );

    let shown = fleet.rollout(rollout);
    let assigned: Vec<&str> = shown["assignments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["customer"].as_str().unwrap())
        .collect();
    assert_eq!(assigned, ["acme", "globex", "initech"]);
    let kinds: Vec<&str> = shown["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    for kind in [
        "promoted",
        "wave-opened",
        "assigned",
        "failed",
        "halted",
        "resumed",
    ] {
        assert!(kinds.contains(&kind), "{kind} in {kinds:?}");
    }
    let listed = fleet.admin.req("GET", "/api/v1/rollouts", &[], None);
    assert_eq!(listed.json()[0]["id"], rollout);
}

#[test]
fn an_aborted_rollout_assigns_nobody_else_and_a_failed_sync_halts() {
    let fleet = Fleet::start("1s", &[("acme", Some("canary")), ("globex", Some("early"))]);
    let v1 = release("1.0.0");
    push_release(&fleet.publisher, &v1);
    assert_eq!(
        promote(&fleet.publisher, &statement(&v1, false), &v1).status,
        201
    );
    let acme = fleet.customer("acme");
    let first = fleet.assignment(&acme, "acme").assignments[0].rollout;
    let r = fleet.admin.req(
        "POST",
        &format!("/api/v1/rollouts/{first}/abort"),
        &[],
        None,
    );
    assert_eq!(r.json()["state"], "aborted");
    fleet.report(
        &acme,
        &release_receipt("acme", "acme-1", "1.0.0", Outcome::Succeeded),
    );
    std::thread::sleep(Duration::from_millis(1500));
    let globex = fleet.customer("globex");
    assert!(fleet.assignment(&globex, "globex").assignments.is_empty());
    assert_eq!(
        fleet.assignment(&acme, "acme").assignments.len(),
        1,
        "acme keeps its assignment"
    );

    // A newer version: a sync report that failed at the assigned version halts it.
    let v2 = release("1.1.0");
    push_release(&fleet.publisher, &v2);
    assert_eq!(
        promote(&fleet.publisher, &statement(&v2, false), &v2).status,
        201
    );
    let second = fleet.assignment(&acme, "acme").assignments[0].clone();
    assert_eq!(second.version.to_string(), "1.1.0");
    let report = serde_json::json!({
        "customer": "acme", "startedAt": "2027-01-15T08:00:00Z", "finishedAt": "2027-01-15T08:01:00Z",
        "releases": [{"release": "platform", "kind": "release", "assigned": "1.1.0", "running": "1.0.0",
            "state": "failed", "message": "apply of `network` failed"}]
    });
    let body = serde_json::to_vec(&report).unwrap();
    let r = globex.req("POST", "/api/v1/customers/acme/sync", &[], Some(&body));
    assert_eq!(
        r.status, 403,
        "another customer's token may not report for acme"
    );
    let r = acme.req("POST", "/api/v1/customers/acme/sync", &[], Some(&body));
    assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));
    let seen = fleet
        .admin
        .req("GET", "/api/v1/customers/acme", &[], None)
        .json();
    assert!(
        seen["customer"]["lastSeen"].is_string(),
        "a sync pass counts as seen: {seen}"
    );
    // A pass that failed is in the customer's answer and in the fleet's failures
    // (`fleet --failed`), with the runner's reason, though it left no receipt.
    assert_eq!(seen["syncs"][0]["state"], "failed", "{seen}");
    assert_eq!(
        seen["syncs"][0]["message"], "apply of `network` failed",
        "{seen}"
    );
    let failed = fleet
        .admin
        .req("GET", "/api/v1/fleet/failed-syncs", &[], None)
        .json();
    assert_eq!(failed[0]["customer"], "acme", "{failed}");
    assert_eq!(failed[0]["release"], "platform", "{failed}");
    assert_eq!(failed[0]["assigned"], "1.1.0", "{failed}");
    let r = globex.req("GET", "/api/v1/fleet/failed-syncs?customer=acme", &[], None);
    assert_eq!(
        r.status, 403,
        "another customer's failures are not globex's to read"
    );
    let r = fleet.admin.req(
        "GET",
        "/api/v1/fleet/failed-syncs?customer=acmee",
        &[],
        None,
    );
    assert_eq!(
        r.status, 404,
        "an unknown customer is named, not answered with none"
    );
    assert!(
        String::from_utf8_lossy(&r.body).contains("`acme`"),
        "did-you-mean: {}",
        String::from_utf8_lossy(&r.body)
    );
    let shown = fleet.rollout(second.rollout);
    assert_eq!(shown["rollout"]["state"], "halted");
    assert!(shown["rollout"]["haltedReason"]
        .as_str()
        .unwrap()
        .contains("network"));
    // An older version is refused once a newer one is promoted.
    let r = promote(&fleet.publisher, &statement(&v1, true), &v1);
    assert_eq!(r.status, 409, "{}", String::from_utf8_lossy(&r.body));
}

#[test]
fn forged_or_unheld_statements_are_refused_and_start_nothing() {
    let fleet = Fleet::start("1h", &[("acme", Some("canary"))]);
    let v1 = release("1.0.0");
    push_release(&fleet.publisher, &v1);

    let mut forged = statement(&v1, false);
    forged.statement.required = true;
    let r = promote(&fleet.publisher, &forged, &v1);
    assert_eq!(
        (r.status, r.error_code()),
        (400, "MANIFEST_INVALID".to_string())
    );

    let mut newer = statement(&v1, false);
    newer.statement.format = CHANNEL_STATEMENT_FORMAT + 1;
    let newer = SignedChannelStatement::sign(newer.statement, &vendor());
    assert_eq!(promote(&fleet.publisher, &newer, &v1).status, 400);

    // Approves an index the registry does not hold (never pushed).
    let unheld = release("2.0.0");
    let (_, image) = fleet.publisher.push_image(REPO, "scratch", 7);
    let mut subject = unheld.clone();
    subject.index.digest = image.parse::<Digest>().unwrap();
    let r = promote(&fleet.publisher, &statement(&subject, false), &subject);
    assert_eq!(r.status, 400, "{}", String::from_utf8_lossy(&r.body));
    assert!(String::from_utf8_lossy(&r.body).contains("does not hold"));

    // Security review §7.3: a statement signed by a key that did not sign the
    // release (a publisher token and a key of one's own) is refused, starts
    // nothing, and does not take the version from the vendor's own promotion.
    let stranger = PrivateKey::from_secret_bytes([7; 32]);
    let foreign = SignedChannelStatement::sign(statement(&v1, false).statement, &stranger);
    let r = promote(&fleet.publisher, &foreign, &v1);
    assert_eq!(
        (r.status, r.error_code()),
        (403, "DENIED".to_string()),
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let body = String::from_utf8_lossy(&r.body).to_string();
    assert!(
        body.contains(&format!(
            "signed by key `{}`",
            stranger.public_key().key_id()
        )) && body.contains(&vendor().public_key().key_id()),
        "{body}"
    );

    let listed = fleet.admin.req("GET", "/api/v1/rollouts", &[], None);
    assert_eq!(listed.json(), serde_json::json!([]));
    assert!(fleet
        .assignment(&fleet.customer("acme"), "acme")
        .assignments
        .is_empty());
    assert_eq!(
        promote(&fleet.publisher, &statement(&v1, false), &v1).status,
        201,
        "the vendor's own statement still promotes the version"
    );

    let doc = fleet
        .admin
        .req("GET", "/api/v1/openapi.json", &[], None)
        .json();
    for path in [
        "/api/v1/customers/{id}/assignment",
        "/api/v1/customers/{id}/sync",
        "/api/v1/customers/{id}/rollout",
        "/api/v1/release-receipts",
        "/api/v1/channels/{name}",
        "/api/v1/rollouts",
        "/api/v1/rollouts/{id}",
        "/api/v1/rollouts/{id}/pause",
        "/api/v1/rollouts/{id}/resume",
        "/api/v1/rollouts/{id}/abort",
    ] {
        assert!(doc["paths"][path].is_object(), "{path} is documented");
    }
}

#[test]
fn a_promotion_to_a_channel_the_registry_does_not_have_is_refused_and_starts_nothing() {
    let fleet = Fleet::start("1h", &[("acme", Some("canary"))]);
    let v1 = release("1.0.0");
    push_release(&fleet.publisher, &v1);
    let mut misspelt = statement(&v1, false);
    misspelt.statement.channel = "stabel".into();
    let misspelt = SignedChannelStatement::sign(misspelt.statement, &vendor());

    // Not a rollout to a channel nobody is on, "completed 0/0": a 404 naming the
    // channels there are and the nearest.
    let r = promote(&fleet.publisher, &misspelt, &v1);
    assert_eq!(
        (r.status, r.error_code()),
        (404, "NOT_FOUND".to_string()),
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let message = r.json()["errors"][0]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        message,
        "channel `stabel` does not exist in this registry; did you mean `stable`?; its channels: `stable`; \
         to start a new channel, create it first with `stackpack-registry channel set stabel`"
    );
    let listed = fleet.admin.req("GET", "/api/v1/rollouts", &[], None);
    assert_eq!(listed.json(), serde_json::json!([]));

    // Creating a channel is explicit; then the same statement is taken.
    cli_ok(&fleet.server, &["channel", "set", "stabel"]);
    let r = promote(&fleet.publisher, &misspelt, &v1);
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let listed = fleet.admin.req("GET", "/api/v1/rollouts", &[], None).json();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
}

#[test]
fn a_customer_behind_is_assigned_the_required_version_first() {
    let fleet = Fleet::start("1s", &[("acme", None)]);
    let versions: Vec<ReleaseArtifacts> = ["1.0.0", "1.1.0", "1.2.0"]
        .into_iter()
        .map(release)
        .collect();
    for v in &versions {
        push_release(&fleet.publisher, v);
    }
    let acme = fleet.customer("acme");
    assert_eq!(
        promote(
            &fleet.publisher,
            &statement(&versions[0], false),
            &versions[0]
        )
        .status,
        201
    );
    fleet.report(
        &acme,
        &release_receipt("acme", "acme-1", "1.0.0", Outcome::Succeeded),
    );
    assert_eq!(
        promote(
            &fleet.publisher,
            &statement(&versions[1], true),
            &versions[1]
        )
        .status,
        201
    );
    assert_eq!(
        promote(
            &fleet.publisher,
            &statement(&versions[2], false),
            &versions[2]
        )
        .status,
        201
    );
    let a = fleet.assignment(&acme, "acme").assignments[0].clone();
    assert_eq!(a.version.to_string(), "1.1.0");
    assert_eq!(
        a.on_the_way_to.as_ref().map(|v| v.to_string()).as_deref(),
        Some("1.2.0")
    );
    a.verify(&[vendor().public_key()], "stable").unwrap();
    let second = release_receipt("acme", "acme-2", "1.1.0", Outcome::Succeeded);
    fleet.report(&acme, &second);
    let again = acme.req(
        "POST",
        "/api/v1/release-receipts",
        &[],
        Some(&serde_json::to_vec(&second).unwrap()),
    );
    assert_eq!(
        again.status, 200,
        "the same receipt again is accepted and changes nothing"
    );
    let mut forged = second.clone();
    forged.receipt.outcome = Outcome::Failed;
    let refused = acme.req(
        "POST",
        "/api/v1/release-receipts",
        &[],
        Some(&serde_json::to_vec(&forged).unwrap()),
    );
    assert_eq!(
        refused.status, 400,
        "a receipt changed after signing does not verify"
    );
    let a = fleet.assignment(&acme, "acme").assignments[0].clone();
    assert_eq!(
        (a.version.to_string(), a.on_the_way_to),
        ("1.2.0".to_string(), None)
    );
}

#[test]
fn support_pages_show_rollouts_who_failed_and_a_customer_waiting_for_approval() {
    use crate::ui::{get, html, sign_in};
    let fleet = Fleet::start("1h", &[("acme", Some("canary"))]);
    let v1 = release("1.0.0");
    push_release(&fleet.publisher, &v1);
    assert_eq!(
        promote(&fleet.publisher, &statement(&v1, false), &v1).status,
        201
    );
    let acme = fleet.customer("acme");
    let rollout = fleet.assignment(&acme, "acme").assignments[0].rollout;
    let report = serde_json::json!({
        "customer": "acme", "startedAt": "2027-01-15T08:00:00Z", "finishedAt": "2027-01-15T08:01:00Z",
        "releases": [{"release": "platform", "assigned": "1.0.0", "state": "pending-approval",
            "pending": {"id": "plan-<b>1</b>", "since": "2027-01-15T08:00:30Z", "add": 1, "change": 0, "destroy": 2}}]
    });
    let r = acme.req(
        "POST",
        "/api/v1/customers/acme/sync",
        &[],
        Some(&serde_json::to_vec(&report).unwrap()),
    );
    assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));
    fleet.report(
        &acme,
        &release_receipt("acme", "acme-<i>1</i>", "1.0.0", Outcome::Failed),
    );

    let cookie = sign_in(&fleet.server, &fleet.server.token("support", None));
    let list = html(&get(&fleet.server, "/ui/rollouts", &cookie));
    assert!(
        list.contains("platform@1.0.0") && list.contains("halted"),
        "{list}"
    );
    let page = html(&get(
        &fleet.server,
        &format!("/ui/rollouts/{rollout}"),
        &cookie,
    ));
    assert!(
        page.contains("acme-&lt;i&gt;1&lt;/i&gt;"),
        "the halt names the receipt, escaped"
    );
    assert!(
        page.contains("ci &lt;release job&gt;"),
        "who promoted, escaped"
    );
    assert!(!page.contains("<i>1</i>") && !page.contains("<release job>"));
    let customer = html(&get(&fleet.server, "/ui/customers/acme", &cookie));
    assert!(customer.contains("id=\"channel\">stable<"), "{customer}");
    // At the pages' one precision: how long, the exact time on hover.
    assert!(
        customer.contains(
            "waiting for approval since <time datetime=\"2027-01-15T08:00:30Z\" title=\"2027-01-15 08:00:30 UTC\">"
        ),
        "{customer}"
    );
    assert!(customer.contains("plan-&lt;b&gt;1&lt;/b&gt;") && !customer.contains("<b>1</b>"));
}

/// The assignment poll (10,000 runners at 300/s) and the gate a receipt re-reads
/// are indexed lookups: no step of their plans scans a table.
#[test]
fn the_assignment_poll_and_the_gate_never_scan_a_table() {
    let dir = tempfile::tempdir().unwrap();
    let db = stackpack_registry::db::Db::open(&dir.path().join("registry.db"), 1).unwrap();
    let hot = stackpack_registry::db::rollouts::HOT_QUERIES
        .iter()
        .chain(stackpack_registry::db::forecasts::HOT_QUERIES);
    for (name, sql) in hot {
        let plan: Vec<String> = db
            .read_any(|c| {
                let c = c.sqlite("a query plan")?;
                let mut statement = c.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
                let nulls = vec![rusqlite::types::Null; statement.parameter_count()];
                let rows = statement
                    .query_map(rusqlite::params_from_iter(nulls), |r| r.get::<_, String>(3))?
                    .collect::<rusqlite::Result<Vec<String>>>()?;
                Ok(rows)
            })
            .unwrap();
        let scans: Vec<&String> = plan
            .iter()
            .filter(|step| {
                step.starts_with("SCAN")
                    && step.as_str() != "SCAN CONSTANT ROW"
                    && !step.contains("INDEX")
            })
            .collect();
        assert!(scans.is_empty(), "{name} scans: {plan:?}");
    }
}

/// A single stack is a release of one: a statement of kind `stack` approves a bundle
/// in its repository, and the gate reads the stack's own receipts.
#[test]
fn a_stack_promotion_rolls_out_on_stack_receipts() {
    use stackpack_test_support::receipts::ReceiptBuilder;
    const STACKS: &str = "acme/stacks/network";
    let fleet = Fleet::start(
        "1h",
        &[("acme", Some("canary")), ("globex", Some("canary"))],
    );
    let config = br#"{"format":1,"stack":"network","version":"2.0.0"}"#;
    let (manifest, digest) = fleet.publisher.push_bundle_config(STACKS, "2.0.0", config);
    // The bundle's signature, by the vendor, as `stackpack publish` pushes it.
    let bundle = stackpack_schema::oci::Descriptor::new(
        OCI_MANIFEST,
        digest.parse().unwrap(),
        manifest.len() as u64,
    );
    let (envelope, signature) = stackpack_test_support::release_index::signature_of(
        &bundle,
        STACKS,
        &"2.0.0".parse().unwrap(),
        &vendor(),
    );
    fleet.publisher.push_blob(STACKS, &envelope);
    fleet.publisher.push_blob(STACKS, media_type::EMPTY_BLOB);
    let r = fleet.publisher.push_manifest(
        STACKS,
        &signature.digest.to_string(),
        &signature.bytes,
        OCI_MANIFEST,
    );
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let signed = SignedChannelStatement::sign(
        ChannelStatement {
            format: CHANNEL_STATEMENT_FORMAT,
            channel: "stable".into(),
            kind: ApprovedKind::Stack,
            release: "network".into(),
            version: "2.0.0".parse().unwrap(),
            digest: digest.parse().unwrap(),
            required: false,
            promoted_at: "2027-01-15T08:00:00Z".into(),
            promoted_by: None,
            key_id: String::new(),
        },
        &vendor(),
    );
    let subject = stackpack_schema::oci::Descriptor::new(
        OCI_MANIFEST,
        digest.parse().unwrap(),
        manifest.len() as u64,
    );
    let (statement_manifest, layer) = statement_artifact(&signed, &subject);
    fleet.publisher.push_blob(STACKS, &layer);
    fleet.publisher.push_blob(STACKS, media_type::EMPTY_BLOB);
    let bytes = statement_manifest.to_bytes();
    let r = fleet
        .publisher
        .push_manifest(STACKS, &sha256(&bytes), &bytes, OCI_MANIFEST);
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));

    let acme = fleet.customer("acme");
    let a = fleet.assignment(&acme, "acme").assignments[0].clone();
    assert_eq!(
        (a.kind, a.release.as_str()),
        (ApprovedKind::Stack, "network")
    );
    let receipt = |customer: &str, outcome: Outcome| {
        let builder = ReceiptBuilder::new(customer, "network", "2.0.0")
            .id(format!("{customer}-network"))
            .bundle_digest(digest.parse().unwrap())
            .kind(ReceiptKind::Apply, outcome)
            .at("2027-01-15T09:00:00Z");
        let builder = match outcome {
            Outcome::Failed => {
                builder.failure("creating VPC: VpcLimitExceeded", Some("aws_vpc.main"))
            }
            _ => builder,
        };
        builder.sign(&PrivateKey::from_secret_bytes(
            [customer.len() as u8 + 1; 32],
        ))
    };
    let r = acme.req(
        "POST",
        "/api/v1/receipts",
        &[],
        Some(&receipt("acme", Outcome::Succeeded).to_bytes()),
    );
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let shown = fleet.rollout(a.rollout);
    assert_eq!(shown["assignments"][0]["gate"], "succeeded", "{shown}");
    let globex = fleet.customer("globex");
    let r = globex.req(
        "POST",
        "/api/v1/receipts",
        &[],
        Some(&receipt("globex", Outcome::Failed).to_bytes()),
    );
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let shown = fleet.rollout(a.rollout);
    assert_eq!(shown["rollout"]["state"], "halted");
    let halted = shown["rollout"]["haltedReason"].as_str().unwrap();
    assert!(halted.contains("globex-network"), "{halted}");
    // Issue 39: why the receipt failed, in `fleet`'s words, not only that it did.
    assert!(
        halted.ends_with("failed: `aws_vpc.main`: creating VPC: VpcLimitExceeded"),
        "{halted}"
    );
}

/// The scheduler opens a wave whose soak passed by itself, with nobody asking: the
/// database is read directly, so no request moves the rollout on.
#[test]
fn the_scheduler_opens_a_due_wave_without_a_request() {
    let fleet = Fleet::start_with(
        &["--rollout-tick-secs", "1"],
        "1s",
        &[("acme", Some("canary")), ("globex", Some("early"))],
    );
    let v1 = release("1.0.0");
    push_release(&fleet.publisher, &v1);
    assert_eq!(
        promote(&fleet.publisher, &statement(&v1, false), &v1).status,
        201
    );
    let acme = fleet.customer("acme");
    fleet.report(
        &acme,
        &release_receipt("acme", "acme-1", "1.0.0", Outcome::Succeeded),
    );
    let db = rusqlite::Connection::open(fleet.server.data.join("registry.db")).unwrap();
    let assigned = || -> i64 {
        db.query_row(
            "SELECT COUNT(*) FROM rollout_assignments WHERE customer = 'globex'",
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    let deadline = Instant::now() + Duration::from_secs(15);
    while assigned() == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(
        assigned(),
        1,
        "the early wave opened on the scheduler's tick"
    );
}

#[test]
fn admins_place_customers_and_set_channels_over_the_api() {
    let fleet = Fleet::start("1h", &[]);
    cli_ok(&fleet.server, &["customer", "add", "acme"]);
    let body = br#"{"waves":["pilot","everyone"],"soak":"90m"}"#;
    let r = fleet
        .admin
        .req("PUT", "/api/v1/channels/beta", &[], Some(body));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["soakSeconds"], 5400);
    let bad = fleet.admin.req(
        "PUT",
        "/api/v1/channels/beta",
        &[],
        Some(br#"{"soak":"soon"}"#),
    );
    assert_eq!(bad.status, 400);

    let support = Client::new(
        fleet.server.url(),
        Some(fleet.server.token("support", None)),
    );
    let place = br#"{"channel":"beta","wave":"pilot"}"#;
    let r = support.req("PUT", "/api/v1/customers/acme/rollout", &[], Some(place));
    assert_eq!(
        r.status, 403,
        "support reads rollouts, only admins change them"
    );
    let r = fleet
        .admin
        .req("PUT", "/api/v1/customers/acme/rollout", &[], Some(place));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        (r.json()["channel"].clone(), r.json()["wave"].clone()),
        ("beta".into(), "pilot".into())
    );
    let r = fleet.admin.req(
        "PUT",
        "/api/v1/customers/acme/rollout",
        &[],
        Some(br#"{"channel":"beta","wave":"canary"}"#),
    );
    assert_eq!(r.status, 400);
    assert!(
        String::from_utf8_lossy(&r.body).contains("`pilot`"),
        "the error lists the waves"
    );
    let r = fleet
        .admin
        .req("PUT", "/api/v1/customers/nobody/rollout", &[], Some(place));
    assert_eq!(r.status, 404);

    let answer = fleet.assignment(&support, "acme");
    assert_eq!(
        (answer.channel.as_deref(), answer.wave.as_deref()),
        (Some("beta"), Some("pilot"))
    );
    let channels = json(&cli_ok(&fleet.server, &["channel", "list", "--json"]));
    assert!(channels
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["name"] == "beta" && c["customers"] == 1));
    let out = cli(
        &fleet.server,
        &[
            "customer",
            "set",
            "acme",
            "--channel",
            "beta",
            "--wave",
            "nope",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unknown wave is a usage error"
    );
}
