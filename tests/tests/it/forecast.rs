//! Forecasts end to end on the real programs: customers left at three different
//! versions of a release get, from `stackpack forecast`, each its own plan along the
//! path it will really take (planned in the emulated AWS account, moto, with the real
//! Terraform and AWS provider); a customer without inputs in the repository is
//! skipped and named; a second forecast is served from the cache. Promotion prints
//! the forecast; one customer whose VPC was changed by hand before the upgrade makes
//! its real plan differ from its forecast, and the registry halts the rollout naming
//! the resource and saying the runner saw it drift. After a resume, the other
//! customers' real plans match their forecasts and the rollout goes on.

use std::time::Duration;

use serde_json::Value;
use stackpack_test_support::servers::{Moto, OurRegistry};
use stackpack_test_support::{git, provider_mirror, terraform};

use crate::fleet::{place, rollout_registry, state, wait_for_rollout, Customer, Vendor};

const NAMESPACE: &str = "edge";

/// The inputs of customer `id` (its own network range): the same in the vendor's
/// repository (`customers/<id>/`) and in the customer's runner.
fn inputs(id: &str, n: u8) -> [(&'static str, String); 2] {
    [
        (
            "net.tfvars",
            format!("name = \"{id}\"\ncidr = \"10.{n}.0.0/16\"\n"),
        ),
        ("app.tfvars", "size = 2\n".to_string()),
    ]
}

/// The vendor's environment for `publish` and `forecast`: the provider mirror and the
/// emulated account the forecasts run in.
fn vendor_env(moto: &Moto) -> Vec<(&'static str, String)> {
    vec![
        (
            "STACKPACK_PROVIDER_MIRROR",
            provider_mirror().display().to_string(),
        ),
        ("STACKPACK_WITNESS_ENDPOINT", moto.url.clone()),
        ("CHECKPOINT_DISABLE", "1".to_string()),
    ]
}

fn forecast(vendor: &Vendor, registry: &OurRegistry, moto: &Moto, version: &str) -> Value {
    let target = format!("edge@{version}");
    let namespace = vendor.at(registry);
    vendor
        .stackpack_with(
            registry,
            &[
                "forecast",
                &target,
                "--channel",
                "stable",
                "--registry",
                &namespace,
                "--insecure",
                "--json",
            ],
            &vendor_env(moto),
        )
        .ok()
        .json()
}

/// `stack: action address` of every change `customer`'s forecast holds.
fn changes(forecast: &Value, customer: &str) -> Vec<String> {
    let entry = customer_entry(forecast, customer);
    let mut out = Vec::new();
    for stack in entry["stacks"].as_array().into_iter().flatten() {
        for change in stack["changes"].as_array().into_iter().flatten() {
            out.push(format!(
                "{}: {} {}",
                stack["stack"].as_str().unwrap(),
                change["action"].as_str().unwrap(),
                change["address"].as_str().unwrap()
            ));
        }
    }
    out.sort();
    out
}

fn customer_entry<'a>(forecast: &'a Value, customer: &str) -> &'a Value {
    forecast["customers"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["customer"] == customer))
        .unwrap_or_else(|| panic!("{customer} is not in the forecast: {forecast}"))
}

fn from_version(forecast: &Value, customer: &str, stack: &str) -> String {
    let entry = customer_entry(forecast, customer);
    entry["stacks"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["stack"] == stack))
        .and_then(|s| s["from"].as_str())
        .unwrap_or_else(|| panic!("{customer}/{stack} has no running version: {entry}"))
        .to_string()
}

#[test]
fn each_customer_is_forecast_from_where_it_stands_and_a_hand_made_change_halts_the_rollout() {
    let moto = Moto::start();
    let vendor = Vendor::new("forecast-vendor", NAMESPACE, "edge");
    let ids = [("alpha", 31), ("bravo", 32), ("charlie", 33)];
    for (id, n) in ids {
        for (file, text) in inputs(id, n) {
            let path = vendor.repo.join("customers").join(id).join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
    }
    let config = std::fs::read_to_string(vendor.repo.join("stackpack.toml")).unwrap();
    std::fs::write(
        vendor.repo.join("stackpack.toml"),
        format!(
            "{config}\n[witness]\nengine = {:?}\nparallel = 2\n",
            terraform().display().to_string()
        ),
    )
    .unwrap();
    git(&vendor.repo, &["add", "-A"]);
    git(
        &vendor.repo,
        &["commit", "-q", "-m", "customers and the forecast's engine"],
    );

    let registry = rollout_registry("1s");
    let source = format!("registry = \"{}\"\ninsecure = true", vendor.at(&registry));
    let customers: Vec<Customer> = ids
        .iter()
        .map(|&(id, n)| Customer::new(&vendor, &registry, id, &source, &inputs(id, n), moto.env()))
        .collect();
    let [alpha, bravo, charlie] = &customers[..] else {
        unreachable!()
    };
    for customer in &customers {
        place(&registry, customer.id, "canary");
    }
    // In the ledger, never installed, and no inputs in the repository.
    registry.run(&["customer", "add", "delta"]).ok();
    place(&registry, "delta", "general");
    let env = vendor_env(&moto);

    // Three versions; the customers are left one on each.
    let v1 = vendor.publish_with(&registry, &env);
    vendor.promote(&registry, &v1, &[]).ok();
    for customer in [alpha, bravo, charlie] {
        let (state, running, pass) = customer.sync();
        assert_eq!(state, "applied", "{}: {}", customer.id, pass.stderr);
        assert_eq!(running.as_deref(), Some(v1.as_str()));
    }
    vendor.commit(
        "stacks/app/main.tf",
        "output \"endpoint\"",
        "resource \"terraform_data\" \"cache\" {\n  input = var.size\n}\n\noutput \"endpoint\"",
        "app: a cache",
    );
    let v2 = vendor.publish_with(&registry, &env);
    vendor.promote(&registry, &v2, &[]).ok();
    for customer in [bravo, charlie] {
        let (state, _, pass) = customer.sync();
        assert_eq!(state, "applied", "{}: {}", customer.id, pass.stderr);
    }
    vendor.commit(
        "stacks/net/main.tf",
        "    Name = var.name\n",
        "    Name = var.name\n    tier = \"edge\"\n",
        "net: tag the tier",
    );
    let v3 = vendor.publish_with(&registry, &env);
    vendor.promote(&registry, &v3, &[]).ok();
    let (state_v3, _, pass) = charlie.sync();
    assert_eq!(state_v3, "applied", "{}", pass.stderr);

    // The candidate: a flow log marker in the network, a new app revision.
    vendor.commit(
        "stacks/net/main.tf",
        "output \"vpc_id\"",
        "resource \"terraform_data\" \"flow\" {\n  input = var.name\n}\n\noutput \"vpc_id\"",
        "net: flow marker",
    );
    vendor.commit(
        "stacks/app/main.tf",
        "${var.size}\"",
        "${var.size}:v4\"",
        "app: v4",
    );
    let v4 = vendor.publish_with(&registry, &env);

    let first = forecast(&vendor, &registry, &moto, &v4);
    // Each runs the release at its own version, and so other versions of the stacks.
    for (id, running) in [("alpha", &v1), ("bravo", &v2), ("charlie", &v3)] {
        assert_eq!(
            customer_entry(&first, id)["running"],
            running.as_str(),
            "{first}"
        );
    }
    assert_ne!(
        from_version(&first, "alpha", "app"),
        from_version(&first, "bravo", "app")
    );
    assert_ne!(
        from_version(&first, "bravo", "net"),
        from_version(&first, "charlie", "net")
    );
    let alpha_changes = changes(&first, "alpha");
    let bravo_changes = changes(&first, "bravo");
    let charlie_changes = changes(&first, "charlie");
    // Each from where it stands: alpha lacks the cache and the tag, bravo the tag,
    // charlie only the candidate's own changes.
    assert!(
        alpha_changes.contains(&"app: create terraform_data.cache".to_string()),
        "{alpha_changes:?}"
    );
    assert!(
        alpha_changes.contains(&"net: update aws_vpc.main".to_string()),
        "{alpha_changes:?}"
    );
    assert!(
        !bravo_changes.iter().any(|c| c.contains("cache")),
        "{bravo_changes:?}"
    );
    assert!(
        bravo_changes.contains(&"net: update aws_vpc.main".to_string()),
        "{bravo_changes:?}"
    );
    assert!(
        !charlie_changes.iter().any(|c| c.contains("aws_vpc")),
        "{charlie_changes:?}"
    );
    assert!(
        charlie_changes.contains(&"net: create terraform_data.flow".to_string()),
        "{charlie_changes:?}"
    );
    let delta = customer_entry(&first, "delta");
    assert_eq!(delta["outcome"], "skipped", "{delta}");
    assert!(
        delta["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("customers/delta"),
        "{delta}"
    );
    // The same pairs again: served from the cache.
    let second = forecast(&vendor, &registry, &moto, &v4);
    for id in ["alpha", "bravo", "charlie"] {
        assert_eq!(
            customer_entry(&second, id)["cached"],
            true,
            "{id}: {second}"
        );
        assert_eq!(changes(&second, id), changes(&first, id));
    }

    // charlie's operator changes its VPC by hand before the upgrade.
    moto.python(
        "import boto3\n\
         ec2 = boto3.client('ec2', endpoint_url=ENDPOINT, region_name='us-east-1')\n\
         vpcs = ec2.describe_vpcs(Filters=[{'Name': 'tag:Name', 'Values': ['charlie']}])['Vpcs']\n\
         assert len(vpcs) == 1, vpcs\n\
         ec2.create_tags(Resources=[vpcs[0]['VpcId']], Tags=[{'Key': 'tier', 'Value': 'by-hand'}])\n",
    )
    .ok();
    place(&registry, alpha.id, "early");
    place(&registry, bravo.id, "early");
    let promoted = vendor.promote(&registry, &v4, &[]).ok();
    assert!(
        promoted.stderr.contains("forecast: "),
        "{}",
        promoted.stderr
    );

    let (charlie_state, _, pass) = charlie.sync();
    assert_eq!(charlie_state, "applied", "{}", pass.stderr);
    let halted = wait_for_rollout(&registry, "edge", "halted by charlie's miss", |r| {
        state(r) == "halted"
    });
    let reason = halted["haltedReason"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        reason.contains("charlie") && reason.contains("aws_vpc.main"),
        "{halted}"
    );
    assert!(reason.contains("outside the runner"), "{halted}");
    let id = halted["id"].to_string();
    let shown = registry
        .run(&["rollout", "show", &id, "--json"])
        .ok()
        .json();
    let misses = shown.to_string();
    assert!(misses.contains("aws_vpc.main"), "{shown}");

    // The vendor resumes; once the early wave is open (before, alpha would still be
    // assigned the version its canary wave got), its real plans match their forecasts.
    registry.run(&["rollout", "resume", &id]).ok();
    wait_for_rollout(&registry, "edge", "the early wave open", |r| {
        r["waveIndex"].as_u64() >= Some(1)
    });
    for customer in [alpha, bravo] {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let (state, running, pass) = customer.sync();
            if running.as_deref() == Some(v4.as_str()) {
                assert_eq!(state, "applied", "{}", pass.stderr);
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{} never got {v4}: {}",
                customer.id,
                pass.stderr
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    std::thread::sleep(Duration::from_secs(2));
    let after = registry.newest_rollout("edge");
    assert_ne!(
        state(&after),
        "halted",
        "the matching plans halt nothing: {after}"
    );
}
