//! Preflight: the account (moto standing in for it) checked against what a stack
//! needs before anything is applied: the VPC quota against what is in use plus what
//! the plan adds, the stack's range against existing VPCs and the VPCs peered with
//! them, instance types against the zones that offer them, the On-Demand vCPU quota
//! against what runs plus the pools' maximum sizes. Failures name both numbers and
//! the fix; an API that does not answer is `not-checked`, never `passed`. Real
//! Terraform, the example's `network` stack and small stacks that declare
//! `[preflight]`.

use serde_json::Value;

use std::sync::Arc;

use crate::common::release::ReleaseVendor;
use crate::common::{example_dir, Moto, Run, Runner, Vendor};

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
    check_in(&receipt["preflight"], kind)
}

/// The check of `kind` in a list of checks (a receipt's, or `preflight --json`'s).
fn check_in<'a>(checks: &'a Value, kind: &str) -> &'a Value {
    checks
        .as_array()
        .unwrap_or_else(|| panic!("no checks in {checks}"))
        .iter()
        .find(|c| c["kind"] == kind)
        .unwrap_or_else(|| panic!("no `{kind}` check in {checks}"))
}

/// A vendor with one small stack, `name`, whose `stack.toml` declares `preflight`;
/// built. Returns the vendor and the stack's version.
fn small_stack(name: &str, preflight: &str, main: &str) -> (ReleaseVendor, String) {
    let vendor = ReleaseVendor::new();
    vendor.add_stack(
        name,
        &format!("description = \"{name}\"\nengine = \"terraform\"\n\n[preflight]\n{preflight}\n"),
        main,
    );
    let version = vendor.build_version_of(name);
    (vendor, version)
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

variable "max_nodes" {
  type        = number
  default     = 1
  description = "The most machines the pool grows to."
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
    let (vendor, version) = small_stack("pool", "internet-gateways = 1", POOL);
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
    // moto answers no EC2 instance quota (this moto has no seeded stand-in): the
    // vCPU quota is not checked, and says why.
    assert_eq!(
        statuses,
        [
            ("internet-gateway-quota", "passed"),
            ("instance-type", "passed"),
            ("vcpu-quota", "not-checked")
        ],
        "{run}"
    );
    let vcpus = &checks[2];
    assert_eq!(vcpus["subject"], "L-1216C47A", "{vcpus}");
    assert!(
        vcpus["message"]
            .as_str()
            .unwrap()
            .contains("NoSuchResourceException"),
        "{vcpus}"
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

/// A stack on a range that must not collide: it makes a VPC.
const NET: &str = r#"variable "vpc_cidr" {
  type        = string
  description = "The stack's range."
}

variable "aws_endpoint" {
  type        = string
  default     = ""
  description = "An AWS API emulator's URL, or empty."
}

resource "terraform_data" "vpc" {
  input = var.vpc_cidr
}
"#;

#[test]
fn a_range_on_a_vpc_peered_with_the_account_is_a_collision_that_names_the_peer() {
    let (vendor, version) = small_stack("net", "vpcs = 1", NET);
    let runner = Runner::new("globex");
    runner.moto();
    runner.trust_and_import(&vendor.public_key, &vendor.layout_dir());
    // The peer most often lives in another account; moto cannot peer with one (it
    // looks the peer VPC up in the requester's own account), so a VPC in another
    // region stands in: like another account's, it is not in `DescribeVpcs` of
    // `us-east-1`, only in the peering.
    let made = runner
        .moto()
        .python(
            r#"
import boto3, json
east = boto3.client("ec2", endpoint_url=ENDPOINT, region_name="us-east-1")
west = boto3.client("ec2", endpoint_url=ENDPOINT, region_name="us-west-2")
own = east.create_vpc(CidrBlock="10.50.0.0/16")["Vpc"]["VpcId"]
peer = west.create_vpc(CidrBlock="10.40.0.0/16")["Vpc"]["VpcId"]
pcx = east.create_vpc_peering_connection(VpcId=own, PeerVpcId=peer, PeerRegion="us-west-2")
print(json.dumps([own, peer, pcx["VpcPeeringConnection"]["VpcPeeringConnectionId"]]))
"#,
        )
        .ok();
    let ids: Vec<String> = serde_json::from_str(made.stdout.trim()).unwrap();
    let (own, peer, pcx) = (&ids[0], &ids[1], &ids[2]);
    let inputs = runner.temp.path().join("net.tfvars");
    let reference = format!("net@{version}");
    let preflight = |range: &str| {
        std::fs::write(&inputs, format!("vpc_cidr = \"{range}\"\n")).unwrap();
        runner.run(&[
            "preflight",
            &reference,
            "--inputs",
            inputs.to_str().unwrap(),
        ])
    };

    let refused = preflight("10.40.128.0/17").code(1);
    for said in [
        format!("`10.40.128.0/17` overlaps VPC `{peer}` (`10.40.0.0/16`) of account `123456789012` in `us-west-2`, peered with this account's VPC `{own}` by `{pcx}`"),
        "hint: choose a range that overlaps neither the account's VPCs nor the VPCs peered with them (`aws ec2 describe-vpc-peering-connections` lists them)".into(),
    ] {
        assert!(refused.stderr.contains(&said), "{said}\n{}", refused.stderr);
    }

    // A range clear of both sides passes, and says the peerings were looked at.
    let passed = preflight("10.60.0.0/16").ok();
    assert!(
        passed
            .stdout
            .contains("`10.60.0.0/16` overlaps no VPC in `us-east-1` and no VPC peered with them"),
        "{}",
        passed.stdout
    );
}

#[test]
fn a_vcpu_quota_too_small_for_the_pools_fails_with_both_numbers_and_one_big_enough_passes() {
    let (vendor, version) = small_stack("pool", "internet-gateways = 1", POOL);
    // moto answers no EC2 instance quota: scripts/moto-server.py's stand-in serves
    // the values seeded in this file (`STACKPACK_MOTO_EC2_QUOTAS`) in AWS's shape.
    // Seeded, not emulated: what is tested is the runner's reading of them.
    let seeded = tempfile::tempdir().unwrap();
    let quotas = seeded.path().join("ec2-quotas.json");
    let seed = |vcpus: u64| {
        std::fs::write(&quotas, format!("{{\"L-DB2E81BA\": {vcpus}}}")).unwrap();
    };
    seed(8);
    let moto = Moto::start_with(&[("STACKPACK_MOTO_EC2_QUOTAS", quotas.to_str().unwrap())]);
    let (runner, _) = Runner::on_account("globex", Arc::new(moto), &[]);
    runner.trust_and_import(&vendor.public_key, &vendor.layout_dir());
    // What runs already counts: one G machine (4 vCPUs) and one standard one,
    // which counts against another quota.
    runner
        .moto()
        .python(
            r#"
import boto3
ec2 = boto3.client("ec2", endpoint_url=ENDPOINT, region_name="us-east-1")
for kind in ("g5.xlarge", "t3.micro"):
    ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1, InstanceType=kind)
"#,
        )
        .ok();
    let inputs = runner.temp.path().join("pool.tfvars");
    std::fs::write(
        &inputs,
        "instance_type = \"g5.xlarge\"\nzones = [\"us-east-1a\"]\nmax_nodes = 3\n",
    )
    .unwrap();
    let reference = format!("pool@{version}");

    // A plan stops before anything is applied: 4 in use + 3 × 4 the pool adds.
    let plan = runner
        .run(&["plan", &reference, "--inputs", inputs.to_str().unwrap()])
        .code(1);
    for said in [
        "vcpu-quota `L-DB2E81BA`: vCPUs of Running On-Demand G and VT instances in `us-east-1`: quota 8, in use 4, the pools add 12 (`instance_type`: 3 × `g5.xlarge` (4 vCPUs)) (needs 16)",
        "hint: ask for a higher quota: `aws service-quotas request-service-quota-increase --service-code ec2 --quota-code L-DB2E81BA --desired-value 16 --region us-east-1`",
    ] {
        assert!(plan.stderr.contains(said), "{said}\n{}", plan.stderr);
    }
    let failed = last_receipt(&runner);
    assert_eq!(
        check_of(&failed, "vcpu-quota")["status"],
        "failed",
        "{failed}"
    );

    // The quota raised to exactly what is needed: passed, with its numbers.
    seed(16);
    let run = runner
        .run(&[
            "preflight",
            &reference,
            "--inputs",
            inputs.to_str().unwrap(),
            "--json",
        ])
        .ok()
        .json();
    let vcpus = check_in(&run["checks"], "vcpu-quota");
    assert_eq!(vcpus["status"], "passed", "{vcpus}");
    assert!(
        vcpus["message"]
            .as_str()
            .unwrap()
            .contains("quota 16, in use 4, the pools add 12"),
        "{vcpus}"
    );
}
