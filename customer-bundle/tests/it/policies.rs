//! Policies on real plans: the example's Rego policies travel signed in the bundle,
//! and the runner evaluates them on `terraform show -json` of real Terraform plans
//! against the emulated AWS account (moto) before anything is applied. Each policy
//! denies a bad change and allows a good one; `--allow-replace` lets the operator
//! replace a named stateful resource on purpose; a customer's own policy folder
//! adds to the vendor's.

use crate::common;

use common::{build_and_import, edit, globex_inputs, Runner, Vendor};

/// A rule on the nodes' security group open to the world on `port`, in the stack.
fn open_ingress(port: u16) -> String {
    format!(
        "\nresource \"aws_security_group_rule\" \"world_{port}\" {{\n  type              = \"ingress\"\n  security_group_id = module.network.node_security_group_id\n  protocol          = \"tcp\"\n  from_port         = {port}\n  to_port           = {port}\n  cidr_blocks       = [\"0.0.0.0/0\"]\n}}\n"
    )
}

#[test]
fn each_example_policy_denies_a_bad_change_and_allows_a_good_one() {
    let vendor = Vendor::new();
    // Good: HTTPS open to the world, GPU pools at the ceiling.
    vendor.change("stacks/data-plane/main.tf", &open_ingress(443));
    edit(
        &vendor,
        "stacks/data-plane/main.tf",
        "  gpu_families = var.gpu_families\n",
        "  gpu_families = var.gpu_families\n\n  max_nodes_per_pool = 16\n",
    );
    let runner = Runner::new("globex");
    let good = build_and_import(&vendor, &runner);
    let inputs = globex_inputs();
    let inputs = inputs.to_str().unwrap();
    let planned = runner
        .run(&["plan", &good, "--inputs", inputs, "--json"])
        .ok()
        .json();
    assert_eq!(planned["policy"]["files"], 5, "{}", planned["policy"]);
    assert_eq!(planned["policy"]["denied"], serde_json::json!([]));

    // Bad: SSH open to the world, a pool that may grow to 32 nodes, and resources
    // without an `owner` tag.
    vendor.change("stacks/data-plane/main.tf", &open_ingress(22));
    edit(
        &vendor,
        "stacks/data-plane/main.tf",
        "max_nodes_per_pool = 16",
        "max_nodes_per_pool = 32",
    );
    edit(
        &vendor,
        "stacks/data-plane/provider.tf",
        "      \"owner\"       = \"acme-platform\"\n",
        "",
    );
    let bad = build_and_import(&vendor, &runner);
    let run = runner
        .run(&["plan", &bad, "--inputs", inputs, "--json"])
        .code(1);
    let denied = run.json()["policy"]["denied"].clone();
    let has = |rule: &str, address: &str, text: &str| {
        denied.as_array().unwrap().iter().any(|d| {
            d["rule"] == rule
                && d["address"] == address
                && d["message"].as_str().unwrap().contains(text)
        })
    };
    assert!(
        has(
            "deny_open_ingress",
            "aws_security_group_rule.world_22",
            "ports 22-22"
        ),
        "{denied:#}"
    );
    assert!(
        !denied.to_string().contains("world_443"),
        "443 is allowed: {denied:#}"
    );
    assert!(
        has(
            "deny_gpu_ceiling",
            "module.gpu_pool.aws_eks_node_group.pool[\"a100\"]",
            "32 nodes"
        ),
        "{denied:#}"
    );
    assert!(
        has("deny_required_tags", "module.network.aws_vpc.this", "owner"),
        "{denied:#}"
    );
    // An apply of it is refused before anything changes, listing address, rule
    // and message, and recorded as failed.
    let refused = runner
        .run(&["apply", &bad, "--inputs", inputs, "--yes"])
        .code(1);
    assert!(
        refused.stderr.contains("policy refused the plan"),
        "{}",
        refused.stderr
    );
    assert!(
        refused
            .stderr
            .contains("`aws_security_group_rule.world_22`: ingress from the whole internet"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("(deny_open_ingress)"),
        "{}",
        refused.stderr
    );
    assert!(
        !refused.stderr.contains("terraform apply"),
        "{}",
        refused.stderr
    );
    assert!(
        !runner.state_file("data-plane").exists(),
        "the refused apply wrote state"
    );
}

#[test]
fn a_stateful_resource_is_replaced_only_when_the_operator_names_it() {
    let vendor = Vendor::new();
    let runner = Runner::new("globex");
    let first = build_and_import(&vendor, &runner);
    let inputs = globex_inputs();
    let inputs = inputs.to_str().unwrap();
    runner
        .run(&["apply", &first, "--inputs", inputs, "--yes"])
        .ok();
    // The customer adds a policy of their own: a warning, shown and recorded.
    let own = runner.temp.path().join("own-policies");
    std::fs::create_dir_all(&own).unwrap();
    std::fs::write(
        own.join("replace.rego"),
        "package main\n\nwarn_replace[msg] {\n  rc := input.resource_changes[_]\n  rc.change.actions[_] == \"delete\"\n  msg := sprintf(\"%s goes away\", [rc.address])\n}\n",
    )
    .unwrap();
    runner.set_config(
        "[policy]\n",
        &format!("[policy]\npolicies = {:?}\n", own.display().to_string()),
    );

    // A new bucket name forces the models bucket to be replaced.
    edit(
        &vendor,
        "stacks/data-plane/main.tf",
        "  name_prefix = var.customer_id\n",
        "  name_prefix = \"${var.customer_id}-v2\"\n",
    );
    let second = build_and_import(&vendor, &runner);
    let bucket = "module.model_bucket.aws_s3_bucket.this";
    let refused = runner
        .run(&["apply", &second, "--inputs", inputs, "--yes"])
        .code(1);
    assert!(
        refused
            .stderr
            .contains(&format!("`{bucket}`: stateful resource would be replaced")),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("--allow-replace"),
        "{}",
        refused.stderr
    );
    let status = runner.run(&["status", "--json"]).ok().json();
    assert_eq!(
        status["stacks"][0]["version"],
        first.split('@').nth(1).unwrap()
    );
    assert_eq!(status["stacks"][0]["lastAttempt"]["outcome"], "failed");

    // Named: allowed, and the customer's warning is shown and kept with the receipt.
    let applied = runner
        .run(&[
            "apply",
            &second,
            "--inputs",
            inputs,
            "--yes",
            "--allow-replace",
            bucket,
            "--json",
        ])
        .ok();
    let json = applied.json();
    assert_eq!(json["outcome"], "succeeded");
    assert!(
        applied
            .stderr
            .contains(&format!("warning: policy: {bucket} goes away")),
        "{}",
        applied.stderr
    );
    let listed = runner.run(&["receipts", "list", "--json"]).ok().json();
    let last = listed["receipts"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(last["notes"].to_string().contains("goes away"), "{last:#}");
}

/// A resource with a `local-exec` provisioner, which runs `touch` on the runner's
/// machine when applied.
const LOCAL_EXEC: &str = "\nresource \"terraform_data\" \"hook\" {\n  provisioner \"local-exec\" {\n    command = \"touch /tmp/stackpack-hook-ran\"\n  }\n}\n";

/// Issue 23, item 8: a stack that runs commands on the runner's machine (a
/// `local-exec` provisioner) is named as doing so when it is planned, and the
/// example's `commands.rego` denies it before anything is applied.
#[test]
fn a_command_on_the_runners_machine_is_named_in_the_plan_and_denied_by_the_example_policy() {
    let vendor = Vendor::new();
    vendor.change("stacks/data-plane/main.tf", LOCAL_EXEC);
    let runner = Runner::new("globex");
    let reference = build_and_import(&vendor, &runner);
    let inputs = globex_inputs();
    let run = runner
        .run(&[
            "plan",
            &reference,
            "--inputs",
            inputs.to_str().unwrap(),
            "--json",
        ])
        .code(1);
    assert!(
        run.stderr.contains(
            "this stack runs commands on the runner's machine: `terraform_data.hook` (local-exec provisioner)"
        ),
        "{}",
        run.stderr
    );
    let denied = run.json()["policy"]["denied"].clone();
    let denied = denied.as_array().unwrap();
    assert!(
        denied
            .iter()
            .any(|d| d["rule"] == "deny_runner_commands" && d["address"] == "terraform_data.hook"),
        "{denied:?}"
    );
}
