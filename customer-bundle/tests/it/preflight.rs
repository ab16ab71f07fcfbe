//! Preflight: the account (moto standing in for it) checked against what a stack
//! needs before anything is applied: the VPC quota against what is in use plus what
//! the plan adds, the stack's range against existing VPCs, instance types against
//! the zones that offer them. Failures name both numbers and the fix; an API that
//! does not answer is `not-checked`, never `passed`. Real Terraform, the example's
//! `network` stack and a small stack that declares `[preflight]`.

use serde_json::Value;

use crate::common::release::ReleaseVendor;
use crate::common::{example_dir, Run, Runner, Vendor};

/// Makes VPCs in the emulated account until `total` are in use (moto's own default
/// VPC counts), the first with `first_cidr`; returns their ids.
fn fill_vpcs(runner: &Runner, total: usize, first_cidr: &str) -> Vec<String> {
    let made = runner
        .moto()
        .python(&format!(
            r#"
import boto3, json
ec2 = boto3.client("ec2", endpoint_url=ENDPOINT, region_name="us-east-1")
have = len(ec2.describe_vpcs()["Vpcs"])
ids = []
for i in range({total} - have):
    cidr = "{first_cidr}" if i == 0 else "10.{{}}.0.0/16".format(100 + i)
    ids.append(ec2.create_vpc(CidrBlock=cidr)["Vpc"]["VpcId"])
print(json.dumps(ids))
"#
        ))
        .ok();
    serde_json::from_str(made.stdout.trim()).unwrap()
}

fn last_receipt(runner: &Runner) -> Value {
    let receipts = runner.run(&["receipts", "list", "--json"]).ok().json();
    receipts["receipts"].as_array().unwrap().last().unwrap()["receipt"]["receipt"].clone()
}

fn check_of<'a>(receipt: &'a Value, kind: &str) -> &'a Value {
    receipt["preflight"]
        .as_array()
        .unwrap_or_else(|| panic!("no preflight in {receipt}"))
        .iter()
        .find(|c| c["kind"] == kind)
        .unwrap_or_else(|| panic!("no `{kind}` check in {receipt}"))
}

#[test]
fn a_plan_past_the_vpc_quota_or_onto_an_existing_range_fails_with_both_numbers_and_the_fix() {
    let vendor = Vendor::new();
    let built = vendor.build();
    let version = &built.iter().find(|(s, _)| s == "network").unwrap().1;
    let runner = Runner::new("globex");
    runner.trust_and_import(&vendor.public_key, &vendor.layout());
    let reference = format!("network@{version}");
    let inputs = example_dir().join("customers/globex/network.tfvars");
    // The account is at its quota of 5 VPCs, one of them on globex's range.
    let seeded = fill_vpcs(&runner, 5, "10.40.0.0/16");
    let plan = runner
        .run(&["plan", &reference, "--inputs", inputs.to_str().unwrap()])
        .code(1);
    for said in [
        "preflight: the account cannot take `network@",
        "VPCs per Region in `us-east-1`: quota 5, in use 5 in the region, this stack adds 1 (needs 6)",
        &format!("`10.40.0.0/16` overlaps VPC `{}` (`10.40.0.0/16`)", seeded[0]),
        "hint: ask for a higher quota: `aws service-quotas request-service-quota-increase --service-code vpc --quota-code L-F678F1CE --desired-value 6 --region us-east-1`",
    ] {
        assert!(plan.stderr.contains(said), "{said}\n{}", plan.stderr);
    }
    let failed = last_receipt(&runner);
    assert_eq!(failed["outcome"], "failed", "{failed}");
    assert_eq!(check_of(&failed, "vpc-quota")["status"], "failed");
    assert_eq!(check_of(&failed, "cidr")["status"], "failed");
    // The Internet gateway quota has room: passed, with its numbers.
    let igw = check_of(&failed, "internet-gateway-quota");
    assert_eq!(igw["status"], "passed", "{igw}");
    assert!(
        igw["message"].as_str().unwrap().contains("quota 5"),
        "{igw}"
    );

    // Room made: the same plan passes, and its receipt says what was checked.
    runner
        .moto()
        .python(&format!(
            "import boto3\nec2 = boto3.client('ec2', endpoint_url=ENDPOINT, region_name='us-east-1')\nfor v in {seeded:?}:\n    ec2.delete_vpc(VpcId=v)\n"
        ))
        .ok();
    let plan = runner
        .run(&[
            "plan",
            &reference,
            "--inputs",
            inputs.to_str().unwrap(),
            "--json",
        ])
        .ok();
    let passed = &plan.json()["receipt"]["receipt"];
    assert_eq!(
        check_of(passed, "vpc-quota")["status"],
        "passed",
        "{passed}"
    );
    assert_eq!(check_of(passed, "cidr")["status"], "passed", "{passed}");
    assert!(
        plan.stderr
            .contains("preflight vpc-quota `us-east-1`: passed"),
        "{}",
        plan.stderr
    );
}

const POOL: &str = r#"variable "instance_type" {
  type        = string
  description = "The pool's machines."
}

variable "zones" {
  type        = list(string)
  description = "Where the pool runs."
}

variable "aws_endpoint" {
  type        = string
  default     = ""
  description = "An AWS API emulator's URL, or empty."
}

resource "terraform_data" "pool" {
  input = "${var.instance_type}@${join(",", var.zones)}"
}
"#;

#[test]
fn preflight_alone_checks_instance_types_per_zone_and_an_api_that_does_not_answer_is_not_checked() {
    let vendor = ReleaseVendor::new();
    vendor.add_stack(
        "pool",
        "description = \"pool\"\nengine = \"terraform\"\n\n[preflight]\ninternet-gateways = 1\n",
        POOL,
    );
    let version = vendor.build_version_of("pool");
    let runner = Runner::new("globex");
    runner.moto();
    runner.trust_and_import(&vendor.public_key, &vendor.layout_dir());
    let reference = format!("pool@{version}");
    let inputs = |instance_type: &str| {
        let path = runner.temp.path().join(format!("{instance_type}.tfvars"));
        std::fs::write(
            &path,
            format!("instance_type = \"{instance_type}\"\nzones = [\"us-east-1a\"]\n"),
        )
        .unwrap();
        path
    };
    let offered = inputs("t3.micro");
    let run = runner
        .run(&[
            "preflight",
            &reference,
            "--inputs",
            offered.to_str().unwrap(),
            "--json",
        ])
        .ok()
        .json();
    let checks = run["checks"].as_array().unwrap();
    let statuses: Vec<(&str, &str)> = checks
        .iter()
        .map(|c| (c["kind"].as_str().unwrap(), c["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        statuses,
        [
            ("internet-gateway-quota", "passed"),
            ("instance-type", "passed")
        ],
        "{run}"
    );

    let nowhere = inputs("p9z.48xlarge");
    let refused = runner
        .run(&[
            "preflight",
            &reference,
            "--inputs",
            nowhere.to_str().unwrap(),
        ])
        .code(1);
    assert!(
        refused
            .stderr
            .contains("`p9z.48xlarge` is offered in no zone of `us-east-1`"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stdout.contains("instance-type"),
        "{}",
        refused.stdout
    );

    // The account's API does not answer (nothing listens there): not checked, and
    // said so; never passed.
    let unanswered = Run::from(
        runner
            .command(&[
                "preflight",
                &reference,
                "--inputs",
                offered.to_str().unwrap(),
                "--json",
            ])
            .env("TF_VAR_aws_endpoint", "")
            .env("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
            .output()
            .unwrap(),
    )
    .ok()
    .json();
    for c in unanswered["checks"].as_array().unwrap() {
        assert_eq!(c["status"], "not-checked", "{c}");
        assert!(
            c["message"].as_str().unwrap().contains("127.0.0.1:9"),
            "{c}"
        );
    }
}
