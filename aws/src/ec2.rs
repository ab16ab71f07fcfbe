//! EC2's answers (the Query protocol's XML) as typed structs, for the calls the
//! runner's preflight makes ([`crate::api::AwsApi::ec2`]). EC2 lists things as
//! `<somethingSet><item>…</item>…</somethingSet>`; fields are camelCase. Only the
//! fields preflight reads are here; the rest of each answer is skipped.

use serde::de::IgnoredAny;
use serde::Deserialize;

/// `<…Set><item>…</item>…</…Set>`.
#[derive(Deserialize)]
pub struct Set<T> {
    #[serde(rename = "item", default = "Vec::new")]
    pub items: Vec<T>,
}

impl<T> Default for Set<T> {
    fn default() -> Self {
        Set { items: Vec::new() }
    }
}

/// Any answer's `nextToken`: there is another page.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct NextToken {
    pub next_token: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct DescribeVpcs {
    pub vpc_set: Set<Vpc>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Vpc {
    pub vpc_id: String,
    pub cidr_block: Option<String>,
    pub cidr_block_association_set: Set<CidrBlock>,
}

impl Vpc {
    /// The primary block, then every associated one.
    pub fn cidr_blocks(&self) -> Vec<String> {
        self.cidr_block
            .iter()
            .cloned()
            .chain(
                self.cidr_block_association_set
                    .items
                    .iter()
                    .filter_map(|b| b.cidr_block.clone()),
            )
            .collect()
    }
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct CidrBlock {
    pub cidr_block: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct DescribeInternetGateways {
    pub internet_gateway_set: Set<IgnoredAny>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct DescribeNatGateways {
    pub nat_gateway_set: Set<NatGateway>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct NatGateway {
    pub state: String,
    pub subnet_id: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct DescribeSubnets {
    pub subnet_set: Set<Subnet>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Subnet {
    pub subnet_id: String,
    pub availability_zone: String,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct DescribeInstanceTypeOfferings {
    pub instance_type_offering_set: Set<InstanceTypeOffering>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct InstanceTypeOffering {
    pub location: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct DescribeVpcPeeringConnections {
    pub vpc_peering_connection_set: Set<VpcPeeringConnection>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct VpcPeeringConnection {
    pub vpc_peering_connection_id: String,
    pub status: PeeringStatus,
    pub requester_vpc_info: Option<PeeredVpcInfo>,
    pub accepter_vpc_info: Option<PeeredVpcInfo>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct PeeringStatus {
    pub code: String,
}

/// One side of a peering.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct PeeredVpcInfo {
    pub vpc_id: String,
    pub owner_id: String,
    pub region: String,
    pub cidr_block: Option<String>,
    pub cidr_block_set: Set<CidrBlock>,
}

impl PeeredVpcInfo {
    /// The primary block, then every other, without repeating the primary.
    pub fn cidr_blocks(&self) -> Vec<String> {
        let mut blocks: Vec<String> = self
            .cidr_block
            .iter()
            .cloned()
            .chain(
                self.cidr_block_set
                    .items
                    .iter()
                    .filter_map(|b| b.cidr_block.clone()),
            )
            .collect();
        blocks.dedup();
        blocks
    }
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct DescribeInstances {
    pub reservation_set: Set<Reservation>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Reservation {
    pub instances_set: Set<Instance>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Instance {
    pub instance_type: String,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct DescribeInstanceTypes {
    pub instance_type_set: Set<InstanceTypeInfo>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct InstanceTypeInfo {
    pub v_cpu_info: VCpuInfo,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct VCpuInfo {
    pub default_v_cpus: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ec2_items_are_read_at_their_own_depth() {
        let xml = "<DescribeVpcsResponse xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\"><requestId>r</requestId><vpcSet><item><vpcId>vpc-1</vpcId><cidrBlock>10.0.0.0/16</cidrBlock><cidrBlockAssociationSet><item><cidrBlock>10.0.0.0/16</cidrBlock></item><item><cidrBlock>10.1.0.0/16</cidrBlock></item></cidrBlockAssociationSet><tagSet><item><key>Name</key><value>a</value></item></tagSet></item><item><vpcId>vpc-2</vpcId><cidrBlock>172.31.0.0/16</cidrBlock></item></vpcSet></DescribeVpcsResponse>";
        let answer: DescribeVpcs = quick_xml::de::from_str(xml).unwrap();
        let vpcs = &answer.vpc_set.items;
        assert_eq!(vpcs.len(), 2);
        assert_eq!(vpcs[0].vpc_id, "vpc-1");
        assert_eq!(
            vpcs[0].cidr_blocks(),
            ["10.0.0.0/16", "10.0.0.0/16", "10.1.0.0/16"]
        );
        assert_eq!(vpcs[1].cidr_blocks(), ["172.31.0.0/16"]);
        let empty: DescribeVpcs =
            quick_xml::de::from_str("<DescribeVpcsResponse><vpcSet/></DescribeVpcsResponse>")
                .unwrap();
        assert!(empty.vpc_set.items.is_empty());
    }

    #[test]
    fn nested_sets_and_the_next_page_are_read() {
        let xml = "<DescribeInstancesResponse><reservationSet><item><reservationId>r-1</reservationId><instancesSet><item><instanceId>i-1</instanceId><instanceType>m5.large</instanceType><instanceState><code>16</code><name>running</name></instanceState></item><item><instanceType>g5.xlarge</instanceType></item></instancesSet></item></reservationSet><nextToken>abc</nextToken></DescribeInstancesResponse>";
        let answer: DescribeInstances = quick_xml::de::from_str(xml).unwrap();
        let types: Vec<&str> = answer
            .reservation_set
            .items
            .iter()
            .flat_map(|r| &r.instances_set.items)
            .map(|i| i.instance_type.as_str())
            .collect();
        assert_eq!(types, ["m5.large", "g5.xlarge"]);
        let next: NextToken = quick_xml::de::from_str(xml).unwrap();
        assert_eq!(next.next_token.as_deref(), Some("abc"));
    }
}
