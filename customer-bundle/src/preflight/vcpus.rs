//! EC2 On-Demand vCPU quotas: AWS limits the vCPUs running at once per group of
//! instance families (service quotas `ec2`: `L-1216C47A` for the standard families
//! A, C, D, H, I, M, R, T, Z; `L-DB2E81BA` for G and VT; `L-417A185B` for P; …).
//! A pool that cannot grow to its maximum fails at scale-up, long after the apply
//! "succeeded", so each group is checked against what runs now plus what the
//! pools can add: their maximum sizes × the instance type's vCPUs.

use std::collections::BTreeMap;

use serde_json::Value;
use stackpack_aws::api::{ApiError, AwsApi};
use stackpack_aws::ec2;
use stackpack_schema::preflight::{PreflightCheck, PreflightKind, PreflightStatus};

use super::{check, is_instance_type, not_checked, quota_value};
use crate::inputs::Inputs;

/// Machines that can grow by `max_nodes` of one instance type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pool {
    /// Where it comes from: a resource address or an input's path.
    pub name: String,
    /// `None` when the plan does not say (known only after apply).
    pub instance_type: Option<String>,
    pub max_nodes: u64,
}

/// A group of instance families with one On-Demand vCPU quota.
struct Group {
    code: &'static str,
    name: &'static str,
    /// The family's letters before its generation digit (`g` of `g6e`).
    letters: &'static [&'static str],
}

const GROUPS: [Group; 9] = [
    Group {
        code: "L-1216C47A",
        name: "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances",
        letters: &["a", "c", "d", "h", "i", "m", "r", "t", "z", "im", "is"],
    },
    Group {
        code: "L-DB2E81BA",
        name: "Running On-Demand G and VT instances",
        letters: &["g", "gr", "vt"],
    },
    Group {
        code: "L-417A185B",
        name: "Running On-Demand P instances",
        letters: &["p"],
    },
    Group {
        code: "L-1945791B",
        name: "Running On-Demand Inf instances",
        letters: &["inf"],
    },
    Group {
        code: "L-2C3B7624",
        name: "Running On-Demand Trn instances",
        letters: &["trn"],
    },
    Group {
        code: "L-6E869C2A",
        name: "Running On-Demand DL instances",
        letters: &["dl"],
    },
    Group {
        code: "L-74FC7D96",
        name: "Running On-Demand F instances",
        letters: &["f"],
    },
    Group {
        code: "L-7295265B",
        name: "Running On-Demand X instances",
        letters: &["x"],
    },
    Group {
        code: "L-F7808C92",
        name: "Running On-Demand HPC instances",
        letters: &["hpc"],
    },
];

/// The On-Demand vCPU quota `instance_type` counts against: (code, name).
pub fn quota_of(instance_type: &str) -> Option<(&'static str, &'static str)> {
    let letters: String = instance_type
        .chars()
        .take_while(|c| c.is_ascii_lowercase())
        .collect();
    GROUPS
        .iter()
        .find(|g| g.letters.contains(&letters.as_str()))
        .map(|g| (g.code, g.name))
}

/// The pools a plan (`show -json`) grows: EKS node groups and autoscaling groups
/// by their `max_size`, single instances by one. A created (or replaced) one adds
/// its maximum, an updated one what its maximum grows by. `None` when the plan
/// has none of those kinds (the inputs say then).
pub fn from_plan(plan_json: &str) -> Option<Vec<Pool>> {
    let plan: Value = serde_json::from_str(plan_json).ok()?;
    let changes = plan["resource_changes"].as_array()?;
    let mut found = false;
    let mut pools = Vec::new();
    for change in changes {
        let kind = change["type"].as_str().unwrap_or_default();
        let max_of = |state: &Value| match kind {
            "aws_eks_node_group" => state["scaling_config"][0]["max_size"].as_u64(),
            "aws_autoscaling_group" => state["max_size"].as_u64(),
            "aws_instance" => state.is_object().then_some(1),
            _ => None,
        };
        if !matches!(
            kind,
            "aws_eks_node_group" | "aws_autoscaling_group" | "aws_instance"
        ) {
            continue;
        }
        found = true;
        let detail = &change["change"];
        let actions: Vec<&str> = detail["actions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let after = max_of(&detail["after"]).unwrap_or(0);
        let grows = if actions.contains(&"create") {
            after
        } else if actions == ["update"] {
            after.saturating_sub(max_of(&detail["before"]).unwrap_or(0))
        } else {
            0
        };
        if grows > 0 {
            pools.push(Pool {
                name: change["address"].as_str().unwrap_or_default().to_string(),
                instance_type: planned_type(changes, change),
                max_nodes: grows,
            });
        }
    }
    found.then_some(pools)
}

/// The instance type a planned pool runs: its own (`instance_types`' first, an
/// instance's `instance_type`), else the launch template of the same module and
/// key (`aws_launch_template.pool["a100"]` for `aws_eks_node_group.pool["a100"]`),
/// whose id the plan does not know yet.
fn planned_type(changes: &[Value], change: &Value) -> Option<String> {
    let after = &change["change"]["after"];
    let own = after["instance_types"][0]
        .as_str()
        .or_else(|| after["instance_type"].as_str());
    if let Some(own) = own {
        return Some(own.to_string());
    }
    changes
        .iter()
        .filter(|c| c["type"] == "aws_launch_template")
        .filter(|c| c["module_address"] == change["module_address"])
        .filter(|c| c["index"] == change["index"])
        .find_map(|c| {
            let template = &c["change"];
            template["after"]["instance_type"]
                .as_str()
                .or_else(|| template["before"]["instance_type"].as_str())
                .map(str::to_string)
        })
}

/// The pools the inputs describe: an object with an instance type and a number
/// named like `max*` (`{ instance_type = "g5.xlarge", max_size = 3 }`, in a map or
/// list too) is one; every other instance type the inputs name grows by the input
/// named like `max*` (`max_nodes_per_pool`), or by one when none is set.
pub fn from_inputs(inputs: &Inputs) -> Vec<Pool> {
    let mut pools = Vec::new();
    let mut loose: Vec<(String, String)> = Vec::new();
    for value in &inputs.values {
        walk(&value.name, &value.value, &mut pools, &mut loose);
    }
    let max = inputs
        .values
        .iter()
        .filter(|v| v.name.starts_with("max"))
        .find_map(|v| v.value.as_u64())
        .unwrap_or(1);
    loose.sort_by(|a, b| a.1.cmp(&b.1));
    loose.dedup_by(|a, b| a.1 == b.1);
    pools.extend(loose.into_iter().map(|(name, instance_type)| Pool {
        name,
        instance_type: Some(instance_type),
        max_nodes: max,
    }));
    pools
}

fn walk(path: &str, value: &Value, pools: &mut Vec<Pool>, loose: &mut Vec<(String, String)>) {
    match value {
        Value::String(text) if is_instance_type(text) => {
            loose.push((path.to_string(), text.clone()));
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(&format!("{path}[{i}]"), item, pools, loose);
            }
        }
        Value::Object(map) => {
            let max = map
                .iter()
                .filter(|(key, _)| key.contains("max"))
                .find_map(|(_, v)| v.as_u64());
            let mut types = Vec::new();
            for (key, field) in map {
                let path = format!("{path}.{key}");
                match (max, field) {
                    (Some(_), Value::String(text)) if is_instance_type(text) => {
                        types.push(text.clone());
                    }
                    (Some(_), Value::Array(items))
                        if items
                            .iter()
                            .all(|i| i.as_str().is_some_and(is_instance_type))
                            && !items.is_empty() =>
                    {
                        // A pool of several types: the first is the one it asks for.
                        types.extend(items[0].as_str().map(str::to_string));
                    }
                    _ => walk(&path, field, pools, loose),
                }
            }
            if let (Some(max), false) = (max, types.is_empty()) {
                pools.extend(types.into_iter().map(|t| Pool {
                    name: path.to_string(),
                    instance_type: Some(t),
                    max_nodes: max,
                }));
            }
        }
        _ => {}
    }
}

/// What each quota would be checked for, to say it was not: (kind, subject).
pub fn subjects(pools: &[Pool]) -> Vec<(PreflightKind, String)> {
    let mut subjects: Vec<String> = pools
        .iter()
        .map(|p| {
            p.instance_type
                .as_deref()
                .and_then(quota_of)
                .map_or_else(|| p.name.clone(), |(code, _)| code.to_string())
        })
        .collect();
    subjects.sort();
    subjects.dedup();
    subjects
        .into_iter()
        .map(|s| (PreflightKind::VcpuQuota, s))
        .collect()
}

/// A pool and its (known) instance type.
type Member<'a> = (&'a Pool, &'a str);

/// The vCPU quota of every group the pools use, against what runs plus what the
/// pools add.
pub fn checks(api: &AwsApi, pools: &[Pool], out: &mut Vec<PreflightCheck>) {
    let kind = PreflightKind::VcpuQuota;
    let mut groups: BTreeMap<&'static str, (&'static str, Vec<Member>)> = BTreeMap::new();
    for pool in pools {
        let Some(instance_type) = pool.instance_type.as_deref() else {
            out.push(not_checked(
                kind,
                &pool.name,
                &format!(
                    "the plan does not say which instance type `{}` runs",
                    pool.name
                ),
            ));
            continue;
        };
        match quota_of(instance_type) {
            Some((code, name)) => groups
                .entry(code)
                .or_insert((name, Vec::new()))
                .1
                .push((pool, instance_type)),
            None => out.push(not_checked(
                kind,
                instance_type,
                &format!("no On-Demand vCPU quota is known for the family of `{instance_type}`"),
            )),
        }
    }
    if groups.is_empty() {
        return;
    }
    let mut vcpus = Vcpus::new(api);
    let running = running_types(api);
    for (code, (name, members)) in groups {
        out.push(group_check(api, &mut vcpus, &running, code, name, &members));
    }
}

fn group_check(
    api: &AwsApi,
    vcpus: &mut Vcpus,
    running: &Result<Vec<String>, ApiError>,
    code: &str,
    name: &str,
    members: &[Member],
) -> PreflightCheck {
    let kind = PreflightKind::VcpuQuota;
    let region = api.region().to_string();
    let quota = match quota_value(api, "ec2", code) {
        Ok(quota) => quota,
        Err(e) => return not_checked(kind, code, &format!("the quota `{code}` ({name}): {e}")),
    };
    let mut adds = 0;
    let mut parts = Vec::new();
    for (pool, instance_type) in members {
        let each = match vcpus.of(instance_type) {
            Ok(n) => n,
            Err(e) => return not_checked(kind, code, &format!("`{instance_type}`'s vCPUs: {e}")),
        };
        adds += pool.max_nodes * each;
        parts.push(format!(
            "`{}`: {} × `{instance_type}` ({each} vCPUs)",
            pool.name, pool.max_nodes
        ));
    }
    let running = match running {
        Ok(types) => types,
        Err(e) => return not_checked(kind, code, &format!("what runs: {e}")),
    };
    let mut in_use = 0;
    for instance_type in running
        .iter()
        .filter(|t| quota_of(t).is_some_and(|q| q.0 == code))
    {
        match vcpus.of(instance_type) {
            Ok(n) => in_use += n,
            Err(e) => return not_checked(kind, code, &format!("`{instance_type}`'s vCPUs: {e}")),
        }
    }
    let needed = in_use + adds;
    let message = format!(
        "vCPUs of {name} in `{region}`: quota {quota}, in use {in_use}, the pools add {adds} ({}) (needs {needed})",
        parts.join(", ")
    );
    if needed <= quota {
        return check(kind, code, PreflightStatus::Passed, message, None);
    }
    let hint = format!("ask for a higher quota: `aws service-quotas request-service-quota-increase --service-code ec2 --quota-code {code} --desired-value {needed} --region {region}`, or lower the pools' maximum sizes");
    check(kind, code, PreflightStatus::Failed, message, Some(hint))
}

/// The instance type of every instance running or starting in the region.
fn running_types(api: &AwsApi) -> Result<Vec<String>, ApiError> {
    let pages = api.ec2::<ec2::DescribeInstances>(
        "DescribeInstances",
        &[
            ("Filter.1.Name", "instance-state-name"),
            ("Filter.1.Value.1", "pending"),
            ("Filter.1.Value.2", "running"),
        ],
    )?;
    Ok(pages
        .into_iter()
        .flat_map(|page| page.reservation_set.items)
        .flat_map(|reservation| reservation.instances_set.items)
        .map(|instance| instance.instance_type)
        .collect())
}

/// vCPUs per instance type (`DescribeInstanceTypes`), asked once each: one type
/// per call, since AWS refuses a whole call that names one it does not know.
struct Vcpus<'a> {
    api: &'a AwsApi,
    known: BTreeMap<String, u64>,
}

impl<'a> Vcpus<'a> {
    fn new(api: &'a AwsApi) -> Vcpus<'a> {
        Vcpus {
            api,
            known: BTreeMap::new(),
        }
    }

    fn of(&mut self, instance_type: &str) -> Result<u64, ApiError> {
        if let Some(n) = self.known.get(instance_type) {
            return Ok(*n);
        }
        let pages = self.api.ec2::<ec2::DescribeInstanceTypes>(
            "DescribeInstanceTypes",
            &[("InstanceType.1", instance_type)],
        )?;
        let n = pages
            .iter()
            .flat_map(|page| &page.instance_type_set.items)
            .find_map(|item| item.v_cpu_info.default_v_cpus.parse::<u64>().ok())
            .ok_or_else(|| ApiError::Unreadable {
                service: "ec2".into(),
                action: "DescribeInstanceTypes".into(),
                detail: format!("no `vCpuInfo.defaultVCpus` for `{instance_type}`"),
            })?;
        self.known.insert(instance_type.to_string(), n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_map_to_their_vcpu_quota() {
        for (instance_type, code) in [
            ("m7i-flex.large", "L-1216C47A"),
            ("im4gn.xlarge", "L-1216C47A"),
            ("g6.12xlarge", "L-DB2E81BA"),
            ("vt1.3xlarge", "L-DB2E81BA"),
            ("p4d.24xlarge", "L-417A185B"),
            ("inf2.xlarge", "L-1945791B"),
            ("trn1.32xlarge", "L-2C3B7624"),
        ] {
            assert_eq!(
                quota_of(instance_type).map(|q| q.0),
                Some(code),
                "{instance_type}"
            );
        }
        assert_eq!(quota_of("mac2.metal"), None);
    }

    #[test]
    fn a_plan_grows_by_created_maximums_and_updated_increases() {
        let plan = serde_json::json!({"resource_changes": [
            {"address": "module.gpu_pool.aws_launch_template.pool[\"a100\"]", "module_address": "module.gpu_pool",
             "type": "aws_launch_template", "index": "a100",
             "change": {"actions": ["no-op"], "before": {"instance_type": "p4d.24xlarge"}, "after": {"instance_type": "p4d.24xlarge"}}},
            {"address": "module.gpu_pool.aws_eks_node_group.pool[\"a100\"]", "module_address": "module.gpu_pool",
             "type": "aws_eks_node_group", "index": "a100",
             "change": {"actions": ["create"], "before": null, "after": {"scaling_config": [{"max_size": 4}]}}},
            {"address": "aws_autoscaling_group.web", "type": "aws_autoscaling_group",
             "change": {"actions": ["update"], "before": {"max_size": 2}, "after": {"max_size": 5, "instance_type": "m5.large"}}},
            {"address": "aws_instance.bastion", "type": "aws_instance",
             "change": {"actions": ["no-op"], "before": {"instance_type": "t3.micro"}, "after": {"instance_type": "t3.micro"}}}
        ]});
        let pools = from_plan(&plan.to_string()).unwrap();
        assert_eq!(
            pools,
            [
                Pool {
                    name: "module.gpu_pool.aws_eks_node_group.pool[\"a100\"]".into(),
                    instance_type: Some("p4d.24xlarge".into()),
                    max_nodes: 4
                },
                Pool {
                    name: "aws_autoscaling_group.web".into(),
                    instance_type: Some("m5.large".into()),
                    max_nodes: 3
                },
            ]
        );
        assert_eq!(from_plan(r#"{"resource_changes": []}"#), None);
    }
}
