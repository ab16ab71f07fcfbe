//! Preflight: what the runner checked of the customer's account before a plan was
//! applied (quotas, instance type offerings, network ranges), as the plan's output
//! and the receipt record it. A check whose API did not answer is `not-checked`,
//! never `passed`.

use serde::{Deserialize, Serialize};

/// What was checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PreflightKind {
    /// VPCs per Region (service quota `vpc` `L-F678F1CE`).
    VpcQuota,
    /// NAT gateways per Availability Zone (`vpc` `L-FE5A380F`).
    NatGatewayQuota,
    /// Internet gateways per Region (`vpc` `L-A4707A72`).
    InternetGatewayQuota,
    /// An instance type the inputs name, against the zones that offer it.
    InstanceType,
    /// The stack's network range against the account's VPCs and the VPCs peered
    /// with them.
    Cidr,
    /// On-Demand vCPUs of one instance family group (service quota `ec2`, such as
    /// `L-1216C47A` for the standard families), for the pools' maximum sizes.
    VcpuQuota,
}

impl PreflightKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PreflightKind::VpcQuota => "vpc-quota",
            PreflightKind::NatGatewayQuota => "nat-gateway-quota",
            PreflightKind::InternetGatewayQuota => "internet-gateway-quota",
            PreflightKind::InstanceType => "instance-type",
            PreflightKind::Cidr => "cidr",
            PreflightKind::VcpuQuota => "vcpu-quota",
        }
    }
}

impl std::fmt::Display for PreflightKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a check ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PreflightStatus {
    Passed,
    Failed,
    /// The API did not answer (or there were no credentials): unknown, not passed.
    NotChecked,
}

impl PreflightStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            PreflightStatus::Passed => "passed",
            PreflightStatus::Failed => "failed",
            PreflightStatus::NotChecked => "not-checked",
        }
    }
}

impl std::fmt::Display for PreflightStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One check's result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PreflightCheck {
    pub kind: PreflightKind,
    /// What it is about: `us-east-1`, `g5.xlarge`, `10.1.0.0/16`.
    pub subject: String,
    pub status: PreflightStatus,
    /// With the numbers: "quota 5, in use 5, this plan adds 1".
    pub message: String,
    /// The fix, for a failed check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}
