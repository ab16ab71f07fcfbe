//! Alerts that reach a person (issue 29): webhooks from `serve --alert` and
//! `alert add` get one JSON POST per change of a customer's state (failed,
//! drifted, behind, silent), retried with backoff, and a slow or failing webhook
//! never holds a receipt or `/v2/` up.
//!
//! The webhooks are tiny HTTP servers on 127.0.0.1 (std `TcpListener`), answering
//! as each test scripts them and recording every body they receive.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use stackpack_schema::receipt::{Outcome, ReceiptKind, SignedReceipt};
use stackpack_test_support::receipts::ReceiptBuilder;

use crate::ui::{installation_key, minutes_ago, push_bundle};

/// A webhook that records what it receives.
pub(crate) struct Hook {
    pub(crate) url: String,
    /// Every request's body, in order of arrival, with the status it was answered.
    got: Arc<Mutex<Vec<(u16, serde_json::Value)>>>,
}

impl Hook {
    /// Answers the n-th request with `answers[n]` (the last one from then on),
    /// each after `delay`.
    pub(crate) fn start(answers: &[u16], delay: Duration) -> Hook {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let got: Arc<Mutex<Vec<(u16, serde_json::Value)>>> = Default::default();
        let answers = answers.to_vec();
        let recorded = got.clone();
        std::thread::spawn(move || {
            let count = Arc::new(Mutex::new(0usize));
            for stream in listener.incoming().map_while(Result::ok) {
                let (answers, recorded, count) = (answers.clone(), recorded.clone(), count.clone());
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut length = 0;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap();
                        }
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).unwrap();
                    let n = {
                        let mut count = count.lock().unwrap();
                        *count += 1;
                        *count - 1
                    };
                    let status = *answers.get(n).or(answers.last()).unwrap();
                    std::thread::sleep(delay);
                    let json = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
                    recorded.lock().unwrap().push((status, json));
                    let mut stream = stream;
                    let _ = write!(
                        stream,
                        "HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    );
                });
            }
        });
        Hook { url, got }
    }

    /// The bodies answered with a 2xx.
    pub(crate) fn accepted(&self) -> Vec<serde_json::Value> {
        self.got
            .lock()
            .unwrap()
            .iter()
            .filter(|(s, _)| *s < 300)
            .map(|(_, b)| b.clone())
            .collect()
    }

    /// Waits until `n` bodies were accepted (panics after 30 s), then returns them.
    pub(crate) fn wait_for(&self, n: usize) -> Vec<serde_json::Value> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let accepted = self.accepted();
            if accepted.len() >= n {
                return accepted;
            }
            assert!(Instant::now() < deadline, "only {accepted:?} after 30 s");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn post(server: &OurRegistry, customer: &str, signed: &SignedReceipt) -> Duration {
    let client = Client::new(server.url(), Some(server.token("customer", Some(customer))));
    let started = Instant::now();
    let r = client.req("POST", "/api/v1/receipts", &[], Some(&signed.to_bytes()));
    assert!(r.status < 300, "{}", String::from_utf8_lossy(&r.body));
    started.elapsed()
}

fn receipt(
    customer: &str,
    id: &str,
    version: &str,
    outcome: (ReceiptKind, Outcome),
) -> ReceiptBuilder {
    ReceiptBuilder::new(customer, "data-plane", version)
        .id(id)
        .kind(outcome.0, outcome.1)
        .at(&minutes_ago(0))
}

fn fast(extra: &[&str]) -> OurRegistry {
    let mut args = vec!["--alert-tick-ms", "100"];
    if !extra.contains(&"--alert-timeout-secs") {
        args.extend(["--alert-timeout-secs", "2"]);
    }
    args.extend_from_slice(extra);
    OurRegistry::start_with(&args)
}

#[test]
fn a_failed_a_drifted_and_a_behind_stack_each_post_one_event_once_per_change() {
    let hook = Hook::start(&[200], Duration::ZERO);
    let server = fast(&["--alert", &format!("failed,drifted,behind={}", hook.url)]);
    register_customers(&server, ["globex"]);
    let publisher = Client::new(server.url(), Some(server.token("publisher", None)));
    let dp1 = push_bundle(&publisher, "data-plane", "1.0.0", "1.0.0");
    let key = installation_key("globex");
    use Outcome::*;
    use ReceiptKind::*;
    let sign = |b: ReceiptBuilder| b.sign(&key);
    post(
        &server,
        "globex",
        &sign(
            receipt("globex", "r1", "1.0.0", (Apply, Succeeded))
                .bundle_digest(dp1.parse().unwrap())
                .at(&minutes_ago(4)),
        ),
    );
    let failure = "creating EKS Node Group (gpu): InsufficientInstanceCapacity";
    post(
        &server,
        "globex",
        &sign(
            receipt("globex", "r2", "2.0.0", (Apply, Failed))
                .failure(failure, Some("aws_eks_node_group.gpu"))
                .at(&minutes_ago(3)),
        ),
    );
    // Failing again is no change: no second event.
    post(
        &server,
        "globex",
        &sign(
            receipt("globex", "r3", "2.0.0", (Apply, Failed))
                .failure(failure, None)
                .at(&minutes_ago(2)),
        ),
    );
    post(
        &server,
        "globex",
        &sign(
            receipt("globex", "r4", "1.0.0", (Drift, Drifted))
                .drifted("aws_vpc.main", &["tags"])
                .at(&minutes_ago(1)),
        ),
    );
    let events = hook.wait_for(2);
    assert_eq!(events[0]["event"], "failed");
    assert_eq!(events[0]["customer"], "globex");
    assert_eq!(events[0]["receipt"], "r2");
    assert_eq!(
        events[0]["text"],
        "globex: data-plane 2.0.0 failed: `aws_eks_node_group.gpu`: creating EKS Node Group (gpu): InsufficientInstanceCapacity"
    );
    assert_eq!(events[1]["event"], "drifted");
    assert_eq!(events[1]["reason"], "`aws_vpc.main` (tags)");

    // A newer stable release leaves globex behind: one `behind` event.
    push_bundle(&publisher, "data-plane", "1.1.0", "1.0.0");
    let events = hook.wait_for(3);
    assert_eq!(events[2]["event"], "behind");
    assert_eq!(events[2]["reason"], "data-plane 1.1.0 is out");
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        hook.accepted().len(),
        3,
        "once per change: {:?}",
        hook.accepted()
    );

    let out = cli_ok(&server, &["alert", "list", "--json"]);
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list[0]["source"], "config");
    assert_eq!(list[0]["delivered"], 3);
    assert_eq!(list[0]["pending"], 0);
}

#[test]
fn a_webhook_answering_500_is_retried_until_it_answers_and_an_unreachable_one_shows_on_healthz_and_alert_list(
) {
    let flaky = Hook::start(&[500, 200], Duration::ZERO);
    // Credentials in the userinfo, the path and the query, as webhook URLs carry them.
    let port = free_port();
    let nobody = format!("http://hook-user:pa55word@127.0.0.1:{port}/services/T0KEN?token=s3cret");
    let server = fast(&[]);
    register_customers(&server, ["globex"]);
    for webhook in [&flaky.url, &nobody] {
        cli_ok(
            &server,
            &["alert", "add", "--webhook", webhook, "--on", "failed"],
        );
    }
    let signed = receipt(
        "globex",
        "r1",
        "1.0.0",
        (ReceiptKind::Apply, Outcome::Failed),
    )
    .failure("boom", None)
    .sign(&installation_key("globex"));
    post(&server, "globex", &signed);
    let events = flaky.wait_for(1);
    assert_eq!(events[0]["event"], "failed");
    let tries: Vec<u16> = flaky.got.lock().unwrap().iter().map(|(s, _)| *s).collect();
    assert_eq!(tries, [500, 200], "tried again after the 500");

    let deadline = Instant::now() + Duration::from_secs(20);
    let health = loop {
        let r = send("GET", &format!("{}/healthz", server.url()), &[], None);
        assert_eq!(r.status, 200);
        let body = String::from_utf8(r.body).unwrap();
        if body.contains("failing") || Instant::now() > deadline {
            break body;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // `/healthz` answers anyone: the alert by id and host, no credential.
    assert!(
        health.contains(&format!(
            "(`http://127.0.0.1:{port}`) failing: the webhook cannot be reached"
        )),
        "{health}"
    );
    for secret in ["hook-user", "pa55word", "T0KEN", "s3cret"] {
        assert!(!health.contains(secret), "`{secret}` on /healthz: {health}");
    }
    let out = cli_ok(&server, &["alert", "list"]);
    let text = String::from_utf8(out.stdout).unwrap();
    let line = |webhook: &str| {
        text.lines()
            .find(|l| l.contains(webhook))
            .unwrap()
            .to_string()
    };
    assert!(line(&flaky.url).contains("ok, last delivered"), "{text}");
    assert!(line(&nobody).contains("failing since"), "{text}");
}

#[test]
fn a_slow_webhook_never_holds_up_receipts_or_v2() {
    let slow = Hook::start(&[200], Duration::from_secs(3));
    let server = fast(&[
        "--alert-timeout-secs",
        "10",
        "--alert",
        &format!("failed={}", slow.url),
    ]);
    let customers: Vec<String> = (0..20).map(|i| format!("c{i:02}")).collect();
    register_customers(&server, customers.iter().map(String::as_str));
    let started = Instant::now();
    for c in &customers {
        let signed = receipt(
            c,
            &format!("{c}-r1"),
            "1.0.0",
            (ReceiptKind::Apply, Outcome::Failed),
        )
        .failure("boom", None)
        .sign(&installation_key(c));
        let took = post(&server, c, &signed);
        assert!(took < Duration::from_secs(1), "a receipt took {took:?}");
        let t = Instant::now();
        let r = send("GET", &format!("{}/v2/", server.url()), &[], None);
        assert!(r.status == 200 || r.status == 401, "{}", r.status);
        assert!(
            t.elapsed() < Duration::from_secs(1),
            "`/v2/` took {:?}",
            t.elapsed()
        );
    }
    assert!(started.elapsed() < Duration::from_secs(15));
    // Delivered side by side: twenty 3-second answers in far less than 60 s.
    let events = slow.wait_for(20);
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "{:?}",
        started.elapsed()
    );
    let mut named: Vec<String> = events
        .iter()
        .map(|e| e["customer"].as_str().unwrap().to_string())
        .collect();
    named.sort();
    assert_eq!(named, customers);
}

#[test]
fn a_customer_silent_past_the_configured_age_is_announced_once_per_silence() {
    let hook = Hook::start(&[200], Duration::ZERO);
    let server = fast(&[
        "--silent-after",
        "2s",
        "--alert",
        &format!("silent={}", hook.url),
    ]);
    register_customers(&server, ["globex", "initech"]);
    let key = installation_key("globex");
    let report = |id: &str| {
        let signed = receipt(
            "globex",
            id,
            "1.0.0",
            (ReceiptKind::Apply, Outcome::Succeeded),
        )
        .sign(&key);
        post(&server, "globex", &signed);
    };
    report("r1");
    let events = hook.wait_for(1);
    assert_eq!(events[0]["event"], "silent");
    assert_eq!(events[0]["customer"], "globex");
    assert!(events[0]["text"]
        .as_str()
        .unwrap()
        .starts_with("globex: silent: no receipt since "));
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        hook.accepted().len(),
        1,
        "said once, and never of a customer that never reported"
    );
    // Heard from again, then silent again: a new silence, a new event.
    report("r2");
    let events = hook.wait_for(2);
    assert_eq!(events[1]["event"], "silent");
}

#[test]
fn alert_add_refuses_a_bad_address_or_event_and_remove_forgets_one() {
    let server = OurRegistry::start();
    let out = cli(
        &server,
        &["alert", "add", "--webhook", "ftp://x", "--on", "failed"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("`ftp://x`"));
    let out = cli(
        &server,
        &[
            "alert",
            "add",
            "--webhook",
            "https://h.example",
            "--on",
            "late",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("`late` is not an alert event"));
    let out = cli_ok(
        &server,
        &[
            "alert",
            "add",
            "--webhook",
            "https://h.example",
            "--on",
            "silent",
            "--json",
        ],
    );
    let added: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = added["id"].to_string();
    cli_ok(&server, &["alert", "remove", &id]);
    let out = cli(&server, &["alert", "remove", &id]);
    assert_eq!(out.status.code(), Some(1));
    let out = cli_ok(&server, &["alert", "list", "--json"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "[]");
}
