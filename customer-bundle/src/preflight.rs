//! Preflight: the customer's account checked against what a stack needs, before
//! anything is applied, failing with both numbers and the fix ("quota 5, in use 5,
//! this plan adds 1") instead of halfway through an apply.
//!
//! - VPCs per Region, NAT gateways per Availability Zone, Internet gateways per
//!   Region (service quotas `vpc` `L-F678F1CE`, `L-FE5A380F`, `L-A4707A72`) against
//!   what is in use plus what the stack adds: the plan's creates of `aws_vpc`,
//!   `aws_nat_gateway`, `aws_internet_gateway` in a plan or apply; the stack's
//!   `[preflight]` in `stack.toml` (`vpcs`, `nat-gateways`, `internet-gateways`), or
//!   one of each kind it manages, for `stackpack-runner preflight` alone;
//! - every instance type the inputs name, against the zones that offer it (the
//!   zones the inputs name, or any zone of the region);
//! - the stack's network range (an input named like `*cidr*`) against the account's
//!   VPCs and the VPCs peered with them (in any account or region): a collision
//!   names the other VPC. Checked only while the stack's own VPC does not exist yet
//!   (a plan that creates one), or it would collide with itself;
//! - the On-Demand vCPU quota of each instance family group against what runs plus
//!   what the pools can add ([`vcpus`]).
//!
//! The account is reached as the stack's provider reaches it: region from the
//! inputs (`region`, `aws_region`) or `AWS_REGION`/`AWS_DEFAULT_REGION`, the usual
//! credential variables, and for an emulator the endpoint the inputs give the
//! provider (`aws_endpoint`) or `AWS_ENDPOINT_URL`. An API that does not answer,
//! or no credentials, makes a check `not-checked`: never `passed`.

use std::net::Ipv4Addr;
use std::time::Duration;

use stackpack_aws::api::{ApiError, AwsApi};
use stackpack_aws::ec2;
use stackpack_aws::s3::AwsCredentials;
use stackpack_schema::bundle::BundleConfig;
use stackpack_schema::plan::{Action, ResourceChange};
use stackpack_schema::preflight::{PreflightCheck, PreflightKind, PreflightStatus};

use super::error::Error;
use super::inputs::Inputs;

pub mod vcpus;

/// How long one API call may take before its check is "not checked".
const API_TIMEOUT: Duration = Duration::from_secs(10);

/// What the stack adds to the account, by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    pub vpcs: u64,
    pub nat_gateways: u64,
    pub internet_gateways: u64,
    /// Whether the stack's own VPC is still to be made (the range is checked then).
    pub creates_vpc: bool,
    /// The machines the stack can grow by, for the vCPU quotas.
    pub pools: Vec<vcpus::Pool>,
}

impl Needs {
    /// What a plan creates.
    pub fn planned(changes: &[ResourceChange]) -> Needs {
        let count = |kind: &str| {
            changes
                .iter()
                // A replacement's old one goes: only new ones add to what is in use.
                .filter(|c| c.action == Action::Create)
                .filter(|c| c.kind == kind)
                .count() as u64
        };
        let vpcs = count("aws_vpc");
        Needs {
            vpcs,
            nat_gateways: count("aws_nat_gateway"),
            internet_gateways: count("aws_internet_gateway"),
            creates_vpc: vpcs > 0,
            pools: Vec::new(),
        }
    }

    /// What `[preflight]` in the bundle's `stack.toml` declares, else one of each
    /// kind the stack manages.
    pub fn declared(config: &BundleConfig, table: Option<&toml::Table>) -> Needs {
        let kinds = &config.interface.resource_kinds;
        let has = |kind: &str| u64::from(kinds.iter().any(|k| k == kind));
        let get = |key: &str, fallback: u64| {
            table
                .and_then(|t| t.get(key))
                .and_then(|v| v.as_integer())
                .map_or(fallback, |n| n.max(0) as u64)
        };
        let vpcs = get("vpcs", has("aws_vpc"));
        Needs {
            vpcs,
            nat_gateways: get("nat-gateways", has("aws_nat_gateway")),
            internet_gateways: get("internet-gateways", has("aws_internet_gateway")),
            creates_vpc: vpcs > 0,
            pools: Vec::new(),
        }
    }
}

/// True when preflight has something to check for this bundle: it manages AWS
/// resources, or its `stack.toml` declares `[preflight]`.
pub fn applies(config: &BundleConfig, table: Option<&toml::Table>) -> bool {
    table.is_some()
        || config
            .interface
            .resource_kinds
            .iter()
            .any(|k| k.starts_with("aws_"))
}

/// `[preflight]` of the stack's `stack.toml` in `dir` (an unpacked bundle).
pub fn table_in(dir: &std::path::Path) -> Option<toml::Table> {
    let text = std::fs::read_to_string(dir.join("stack.toml")).ok()?;
    let table: toml::Table = text.parse().ok()?;
    table.get("preflight")?.as_table().cloned()
}

/// Where the account is, as the provider would reach it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    pub region: String,
    pub endpoint: Option<String>,
}

impl Account {
    pub fn of(inputs: &Inputs) -> Account {
        let input = |name: &str| {
            inputs
                .get(name)
                .and_then(|v| v.value.as_str())
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        };
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Account {
            region: input("region")
                .or_else(|| input("aws_region"))
                .or_else(|| env("AWS_REGION"))
                .or_else(|| env("AWS_DEFAULT_REGION"))
                .unwrap_or_else(|| "us-east-1".into()),
            endpoint: input("aws_endpoint").or_else(|| env("AWS_ENDPOINT_URL")),
        }
    }
}

fn check(
    kind: PreflightKind,
    subject: &str,
    status: PreflightStatus,
    message: String,
    hint: Option<String>,
) -> PreflightCheck {
    PreflightCheck {
        kind,
        subject: subject.to_string(),
        status,
        message,
        hint,
    }
}

fn not_checked(kind: PreflightKind, subject: &str, why: &str) -> PreflightCheck {
    check(
        kind,
        subject,
        PreflightStatus::NotChecked,
        format!("not checked: {why}"),
        None,
    )
}

/// Every check for a stack that adds `needs`, with `inputs`.
pub fn run(inputs: &Inputs, needs: Needs) -> Vec<PreflightCheck> {
    let account = Account::of(inputs);
    let wanted = Wanted::of(inputs, &account.region);
    let api = match AwsCredentials::load() {
        Err(e) => Err(e.to_string()),
        Ok(None) => Err(
            "no AWS credentials in the environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`) or in an AWS profile"
                .to_string(),
        ),
        Ok(Some(credentials)) => AwsApi::new(
            account.endpoint.as_deref(),
            &account.region,
            credentials,
            API_TIMEOUT,
        )
        .map_err(|e| e.to_string()),
    };
    let mut checks = Vec::new();
    let api = match api {
        Ok(api) => api,
        Err(why) => {
            for (kind, subject) in planned_subjects(&needs, &wanted, &account.region) {
                checks.push(not_checked(kind, &subject, &why));
            }
            return checks;
        }
    };
    quotas(&api, &needs, &mut checks);
    for instance_type in &wanted.instance_types {
        checks.push(instance_type_check(&api, instance_type, &wanted.zones));
    }
    if needs.creates_vpc {
        for cidr in &wanted.cidrs {
            checks.push(cidr_check(&api, cidr));
        }
    }
    vcpus::checks(&api, &needs.pools, &mut checks);
    checks
}

/// What would be checked, to say each was not.
fn planned_subjects(needs: &Needs, wanted: &Wanted, region: &str) -> Vec<(PreflightKind, String)> {
    let mut subjects = Vec::new();
    for (kind, n) in [
        (PreflightKind::VpcQuota, needs.vpcs),
        (PreflightKind::NatGatewayQuota, needs.nat_gateways),
        (PreflightKind::InternetGatewayQuota, needs.internet_gateways),
    ] {
        if n > 0 {
            subjects.push((kind, region.to_string()));
        }
    }
    subjects.extend(
        wanted
            .instance_types
            .iter()
            .map(|t| (PreflightKind::InstanceType, t.clone())),
    );
    if needs.creates_vpc {
        subjects.extend(
            wanted
                .cidrs
                .iter()
                .map(|c| (PreflightKind::Cidr, c.clone())),
        );
    }
    subjects.extend(vcpus::subjects(&needs.pools));
    subjects
}

/// What the inputs name: instance types, zones, the stack's range.
#[derive(Debug, Default, PartialEq, Eq)]
struct Wanted {
    instance_types: Vec<String>,
    zones: Vec<String>,
    cidrs: Vec<String>,
}

impl Wanted {
    fn of(inputs: &Inputs, region: &str) -> Wanted {
        let mut wanted = Wanted::default();
        for value in &inputs.values {
            let mut leaves = Vec::new();
            strings(&value.value, &mut leaves);
            let zones_by_suffix = value.name.contains("zone");
            for text in leaves {
                if is_instance_type(&text) {
                    wanted.instance_types.push(text);
                } else if is_zone(&text) {
                    wanted.zones.push(text);
                } else if zones_by_suffix
                    && text.len() == 1
                    && text.chars().all(|c| c.is_ascii_lowercase())
                {
                    // `availability_zones = ["a", "b"]`, appended to the region.
                    wanted.zones.push(format!("{region}{text}"));
                } else if value.name.contains("cidr")
                    && value.value.is_string()
                    && parse_cidr(&text).is_some()
                {
                    wanted.cidrs.push(text);
                }
            }
        }
        for list in [
            &mut wanted.instance_types,
            &mut wanted.zones,
            &mut wanted.cidrs,
        ] {
            list.sort();
            list.dedup();
        }
        wanted
    }
}

fn strings(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// `g5.xlarge`, `p4d.24xlarge`, `m7i-flex.large`, `c5.metal`.
pub fn is_instance_type(text: &str) -> bool {
    let Some((family, size)) = text.split_once('.') else {
        return false;
    };
    let family_ok = family.len() >= 2
        && family.starts_with(|c: char| c.is_ascii_lowercase())
        && family.chars().any(|c| c.is_ascii_digit())
        && family
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    let size_ok = ["nano", "micro", "small", "medium", "large"].contains(&size)
        || size
            .strip_suffix("xlarge")
            .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
        || size.starts_with("metal");
    family_ok && size_ok
}

/// `us-east-1a`, `eu-west-2c`, `us-gov-west-1a`.
fn is_zone(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    let Some(last) = parts.last() else {
        return false;
    };
    (3..=4).contains(&parts.len())
        && parts[..parts.len() - 1]
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_lowercase()))
        && last.len() >= 2
        && last[..last.len() - 1].chars().all(|c| c.is_ascii_digit())
        && last.ends_with(|c: char| c.is_ascii_lowercase())
}

/// `10.40.0.0/16` as (network, prefix length).
fn parse_cidr(text: &str) -> Option<(u32, u8)> {
    let (address, length) = text.split_once('/')?;
    let address: Ipv4Addr = address.parse().ok()?;
    let length: u8 = length.parse().ok().filter(|l| *l <= 32)?;
    let mask = if length == 0 {
        0
    } else {
        u32::MAX << (32 - length)
    };
    Some((u32::from(address) & mask, length))
}

fn overlaps(a: (u32, u8), b: (u32, u8)) -> bool {
    let shorter = a.1.min(b.1);
    let mask = if shorter == 0 {
        0
    } else {
        u32::MAX << (32 - shorter)
    };
    a.0 & mask == b.0 & mask
}

/// The three VPC quotas, for the kinds the stack adds.
fn quotas(api: &AwsApi, needs: &Needs, out: &mut Vec<PreflightCheck>) {
    let region = api.region().to_string();
    let kinds = [
        (
            PreflightKind::VpcQuota,
            "L-F678F1CE",
            "VPCs per Region",
            needs.vpcs,
        ),
        (
            PreflightKind::NatGatewayQuota,
            "L-FE5A380F",
            "NAT gateways per Availability Zone",
            needs.nat_gateways,
        ),
        (
            PreflightKind::InternetGatewayQuota,
            "L-A4707A72",
            "Internet gateways per Region",
            needs.internet_gateways,
        ),
    ];
    for (kind, code, name, adds) in kinds {
        if adds == 0 {
            continue;
        }
        let quota = match quota_value(api, "vpc", code) {
            Ok(quota) => quota,
            Err(e) => {
                out.push(not_checked(
                    kind,
                    &region,
                    &format!("the quota `{code}` ({name}): {e}"),
                ));
                continue;
            }
        };
        let in_use = match kind {
            PreflightKind::VpcQuota => api
                .ec2::<ec2::DescribeVpcs>("DescribeVpcs", &[])
                .map(|pages| pages.iter().map(|p| p.vpc_set.items.len() as u64).sum()),
            PreflightKind::InternetGatewayQuota => api
                .ec2::<ec2::DescribeInternetGateways>("DescribeInternetGateways", &[])
                .map(|pages| {
                    pages
                        .iter()
                        .map(|p| p.internet_gateway_set.items.len() as u64)
                        .sum()
                }),
            _ => busiest_zone_nat_gateways(api),
        };
        let in_use = match in_use {
            Ok(n) => n,
            Err(e) => {
                out.push(not_checked(kind, &region, &format!("what is in use: {e}")));
                continue;
            }
        };
        // NAT gateways: one per zone is the usual layout, so the busiest zone gets
        // one more, whatever the stack's total.
        let per_check = if kind == PreflightKind::NatGatewayQuota {
            1
        } else {
            adds
        };
        let needed = in_use + per_check;
        let scope = if kind == PreflightKind::NatGatewayQuota {
            "in the busiest zone"
        } else {
            "in the region"
        };
        let message = format!("{name} in `{region}`: quota {quota}, in use {in_use} {scope}, this stack adds {adds} (needs {needed})");
        if needed <= quota {
            out.push(check(kind, &region, PreflightStatus::Passed, message, None));
        } else {
            let hint = format!("ask for a higher quota: `aws service-quotas request-service-quota-increase --service-code vpc --quota-code {code} --desired-value {needed} --region {region}`, or free {} first", needed - quota);
            out.push(check(
                kind,
                &region,
                PreflightStatus::Failed,
                message,
                Some(hint),
            ));
        }
    }
}

/// A quota's value (`GetServiceQuota`): `service` `vpc` or `ec2`.
fn quota_value(api: &AwsApi, service: &str, code: &str) -> Result<u64, ApiError> {
    let answer = api.service_quotas(
        "GetServiceQuota",
        &serde_json::json!({"ServiceCode": service, "QuotaCode": code}),
    )?;
    answer["Quota"]["Value"]
        .as_f64()
        .map(|v| v as u64)
        .ok_or_else(|| ApiError::Unreadable {
            service: "servicequotas".into(),
            action: "GetServiceQuota".into(),
            detail: "no `Quota.Value`".into(),
        })
}

/// The most NAT gateways (not deleted) in any one zone.
fn busiest_zone_nat_gateways(api: &AwsApi) -> Result<u64, ApiError> {
    let mut subnets = Vec::new();
    for page in api.ec2::<ec2::DescribeNatGateways>("DescribeNatGateways", &[])? {
        for item in page.nat_gateway_set.items {
            let state = item.state.as_str();
            if state == "deleted" || state == "deleting" || state == "failed" {
                continue;
            }
            subnets.extend(item.subnet_id);
        }
    }
    if subnets.is_empty() {
        return Ok(0);
    }
    let mut zone_of = std::collections::BTreeMap::new();
    for page in api.ec2::<ec2::DescribeSubnets>("DescribeSubnets", &[])? {
        for item in page.subnet_set.items {
            zone_of.insert(item.subnet_id, item.availability_zone);
        }
    }
    let mut per_zone: std::collections::BTreeMap<String, u64> = Default::default();
    for subnet in subnets {
        *per_zone
            .entry(zone_of.get(&subnet).cloned().unwrap_or(subnet))
            .or_default() += 1;
    }
    Ok(per_zone.values().copied().max().unwrap_or(0))
}

fn instance_type_check(api: &AwsApi, instance_type: &str, zones: &[String]) -> PreflightCheck {
    let kind = PreflightKind::InstanceType;
    let pages = api.ec2::<ec2::DescribeInstanceTypeOfferings>(
        "DescribeInstanceTypeOfferings",
        &[
            ("LocationType", "availability-zone"),
            ("Filter.1.Name", "instance-type"),
            ("Filter.1.Value.1", instance_type),
        ],
    );
    let pages = match pages {
        Ok(pages) => pages,
        Err(e) => return not_checked(kind, instance_type, &e.to_string()),
    };
    let mut offered: Vec<String> = pages
        .into_iter()
        .flat_map(|page| page.instance_type_offering_set.items)
        .filter_map(|item| item.location)
        .collect();
    offered.sort();
    offered.dedup();
    let region = api.region();
    let missing: Vec<&String> = zones.iter().filter(|z| !offered.contains(z)).collect();
    if offered.is_empty() {
        return check(
            kind,
            instance_type,
            PreflightStatus::Failed,
            format!("`{instance_type}` is offered in no zone of `{region}`"),
            Some(format!("choose an instance type `aws ec2 describe-instance-type-offerings --location-type availability-zone --region {region}` lists, or another region")),
        );
    }
    if !missing.is_empty() {
        let missing: Vec<&str> = missing.iter().map(|z| z.as_str()).collect();
        return check(
            kind,
            instance_type,
            PreflightStatus::Failed,
            format!(
                "`{instance_type}` is not offered in `{}` (offered in `{}`)",
                missing.join("`, `"),
                offered.join("`, `")
            ),
            Some(format!(
                "use zones `{}` for it, or another instance type",
                offered.join("`, `")
            )),
        );
    }
    check(
        kind,
        instance_type,
        PreflightStatus::Passed,
        format!("`{instance_type}` is offered in `{}`", offered.join("`, `")),
        None,
    )
}

fn cidr_check(api: &AwsApi, cidr: &str) -> PreflightCheck {
    let kind = PreflightKind::Cidr;
    let Some(range) = parse_cidr(cidr) else {
        return not_checked(kind, cidr, "not an IPv4 range");
    };
    let pages = match api.ec2::<ec2::DescribeVpcs>("DescribeVpcs", &[]) {
        Ok(pages) => pages,
        Err(e) => return not_checked(kind, cidr, &e.to_string()),
    };
    let mut own = Vec::new();
    for item in pages.iter().flat_map(|page| &page.vpc_set.items) {
        let id = item.vpc_id.clone();
        // The primary block and every associated one (`cidrBlockAssociationSet`).
        for block in item.cidr_blocks() {
            if parse_cidr(&block).is_some_and(|other| overlaps(range, other)) {
                return check(
                    kind,
                    cidr,
                    PreflightStatus::Failed,
                    format!("`{cidr}` overlaps VPC `{id}` (`{block}`) in `{}`", api.region()),
                    Some("choose a range that overlaps no VPC of the account (`aws ec2 describe-vpcs` lists them), and set it in the inputs".into()),
                );
            }
        }
        own.push(id);
    }
    match peered_collision(api, range, &own) {
        Err(e) => not_checked(
            kind,
            cidr,
            &format!(
                "`{cidr}` overlaps no VPC in `{}`, but the VPCs peered with them: {e}",
                api.region()
            ),
        ),
        Ok(Some(peer)) => check(
            kind,
            cidr,
            PreflightStatus::Failed,
            format!(
                "`{cidr}` overlaps VPC `{}` (`{}`) of account `{}` in `{}`, peered with this account's VPC `{}` by `{}`",
                peer.vpc, peer.block, peer.owner, peer.region, peer.local_vpc, peer.peering
            ),
            Some("choose a range that overlaps neither the account's VPCs nor the VPCs peered with them (`aws ec2 describe-vpc-peering-connections` lists them), and set it in the inputs".into()),
        ),
        Ok(None) => check(
            kind,
            cidr,
            PreflightStatus::Passed,
            format!(
                "`{cidr}` overlaps no VPC in `{}` and no VPC peered with them",
                api.region()
            ),
            None,
        ),
    }
}

/// A VPC on the other side of a peering whose range overlaps the stack's.
struct PeeredVpc {
    vpc: String,
    block: String,
    owner: String,
    region: String,
    local_vpc: String,
    peering: String,
}

/// The first VPC peered with one of the account's (`own`) whose range overlaps
/// `range`: on either side of a peering not gone, in any account or region (a
/// peered VPC of another account never shows in `DescribeVpcs`).
fn peered_collision(
    api: &AwsApi,
    range: (u32, u8),
    own: &[String],
) -> Result<Option<PeeredVpc>, ApiError> {
    const GONE: [&str; 5] = ["deleted", "deleting", "rejected", "failed", "expired"];
    let pages =
        api.ec2::<ec2::DescribeVpcPeeringConnections>("DescribeVpcPeeringConnections", &[])?;
    for item in pages
        .iter()
        .flat_map(|page| &page.vpc_peering_connection_set.items)
    {
        if GONE.contains(&item.status.code.as_str()) {
            continue;
        }
        let sides: Vec<&ec2::PeeredVpcInfo> = [&item.requester_vpc_info, &item.accepter_vpc_info]
            .into_iter()
            .flatten()
            .collect();
        for (at, side) in sides.iter().enumerate() {
            if own.contains(&side.vpc_id) {
                continue; // checked with the account's own VPCs
            }
            let Some(block) = side
                .cidr_blocks()
                .into_iter()
                .find(|b| parse_cidr(b).is_some_and(|other| overlaps(range, other)))
            else {
                continue;
            };
            let local_vpc = sides
                .get(1 - at)
                .map(|s| s.vpc_id.clone())
                .unwrap_or_default();
            let region = Some(side.region.clone())
                .filter(|r| !r.is_empty())
                .unwrap_or_else(|| api.region().to_string());
            return Ok(Some(PeeredVpc {
                vpc: side.vpc_id.clone(),
                block,
                owner: side.owner_id.clone(),
                region,
                local_vpc,
                peering: item.vpc_peering_connection_id.clone(),
            }));
        }
    }
    Ok(None)
}

/// Preflight on a plan (`plan`, `apply`, `rollback`): what it creates against the
/// account, each result shown as a progress line. Nothing when the stack manages no
/// AWS resource and declares no `[preflight]`. The pools are the plan's (node
/// groups, autoscaling groups, instances), or the inputs' when the plan has none.
pub fn for_plan(
    config: &BundleConfig,
    dir: &std::path::Path,
    inputs: &Inputs,
    plan: &super::engine::PlanDetails,
    status: &dyn Fn(&str),
) -> Vec<PreflightCheck> {
    if !applies(config, table_in(dir).as_ref()) {
        return Vec::new();
    }
    let mut needs = Needs::planned(&plan.changes);
    needs.pools = vcpus::from_plan(&plan.json).unwrap_or_else(|| vcpus::from_inputs(inputs));
    let checks = run(inputs, needs);
    for c in &checks {
        status(&describe(c));
    }
    checks
}

/// `stackpack-runner preflight STACK@VERSION`: the checks alone, without a plan.
/// What the stack adds comes from its `[preflight]` (or one of each kind it
/// manages); a stack this home already runs has its VPC, so its range is not
/// checked against it.
pub fn alone(
    installation: &super::installation::Installation,
    stack: &str,
    version: &semver::Version,
    files: &[std::path::PathBuf],
) -> super::error::Result<Vec<PreflightCheck>> {
    let home = &installation.home;
    let bundle = super::store::verify_in(home, &home.store()?, stack, version)?;
    let mut inputs = super::inputs::read_all(files)?;
    inputs.add_environment(&bundle.config.interface);
    let work =
        super::files::work_folder(&home.work_root(), &format!("{stack}-{version}-preflight-"))?;
    let dir = super::unpack::unpack_verified(home, &bundle, work.path())?;
    let table = table_in(&dir);
    if !applies(&bundle.config, table.as_ref()) {
        return Ok(Vec::new());
    }
    let mut needs = Needs::declared(&bundle.config, table.as_ref());
    if installation.ledger()?.current(stack)?.is_some() {
        needs.creates_vpc = false;
    }
    needs.pools = vcpus::from_inputs(&inputs);
    Ok(run(&inputs, needs))
}

/// The error of a preflight with failed checks: each named with its numbers, the
/// first one's fix as the hint.
pub fn refusal(reference: &str, checks: &[PreflightCheck]) -> Option<Error> {
    let failed: Vec<&PreflightCheck> = checks
        .iter()
        .filter(|c| c.status == PreflightStatus::Failed)
        .collect();
    let first = failed.first()?;
    let lines: String = failed
        .iter()
        .map(|c| format!("\n  {} `{}`: {}", c.kind, c.subject, c.message))
        .collect();
    let mut error = Error::refused(format!(
        "preflight: the account cannot take `{reference}`:{lines}"
    ));
    if let Some(hint) = &first.hint {
        error = error.hint(hint.clone());
    }
    Some(error)
}

/// Fails a run whose preflight found the account cannot take it.
pub fn refuse_failed(
    receipt: &stackpack_schema::receipt::Receipt,
    checks: &[PreflightCheck],
) -> super::error::Result<()> {
    let reference = format!("{}@{}", receipt.stack, receipt.version);
    match refusal(&reference, checks) {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// One line per check, for progress output.
pub fn describe(c: &PreflightCheck) -> String {
    format!(
        "preflight {} `{}`: {} — {}",
        c.kind, c.subject, c.status, c.message
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_types_zones_and_ranges_are_told_apart() {
        for yes in [
            "g5.xlarge",
            "p4d.24xlarge",
            "m7i-flex.large",
            "c5.metal",
            "t3.micro",
        ] {
            assert!(is_instance_type(yes), "{yes}");
        }
        for no in [
            "example.com",
            "1.2",
            "v1.large-ish",
            "g5",
            "terraform_data.db",
        ] {
            assert!(!is_instance_type(no), "{no}");
        }
        assert!(is_zone("us-east-1a") && is_zone("us-gov-west-1b"));
        assert!(!is_zone("us-east-1") && !is_zone("a-b-c"));
        assert!(overlaps(
            parse_cidr("10.40.0.0/16").unwrap(),
            parse_cidr("10.40.8.0/24").unwrap()
        ));
        assert!(!overlaps(
            parse_cidr("10.40.0.0/16").unwrap(),
            parse_cidr("10.41.0.0/16").unwrap()
        ));
    }
}
