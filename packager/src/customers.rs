//! New customers: valid ids, the inputs file `stackpack customer new` writes from a
//! stack's interface, and network ranges that collide with no other customer
//! reporting to the same control-plane region.

use std::collections::BTreeMap;

use ipnet::Ipv4Net;
use serde_json::Value;
use stackpack_interface::{DefaultValue, ModuleInterface, Variable};

/// Every placeholder starts with this, so that `check` can name what is left to fill.
pub const PLACEHOLDER_PREFIX: &str = "<fill in: ";

/// The placeholder written for a required input of `type_text`.
pub fn placeholder(type_text: &str) -> String {
    format!("{PLACEHOLDER_PREFIX}{type_text}>")
}

/// Is this value a placeholder `customer new` wrote and nobody replaced?
pub fn is_placeholder(value: &Value) -> bool {
    value
        .as_str()
        .is_some_and(|s| s.starts_with(PLACEHOLDER_PREFIX) && s.ends_with('>'))
}

/// What makes a customer id valid, for errors.
pub const ID_RULE: &str = "2 to 31 characters: lowercase letters, digits and `-`, starting with a letter and not ending with `-`";

/// A customer id names a folder and ends up in resource names and DNS labels.
pub fn valid_id(id: &str) -> bool {
    let mut chars = id.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    (2..=31).contains(&id.len())
        && first_ok
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !id.ends_with('-')
}

/// One customer's range, as an inputs file holds it.
#[derive(Clone, Debug)]
pub struct CustomerRange {
    pub customer: String,
    /// Repository-relative inputs file.
    pub file: String,
    /// The line of the range in that file.
    pub line: usize,
    pub range: Ipv4Net,
    /// The control-plane region the customer reports to; `None` when not known,
    /// which conflicts with every region.
    pub control_plane_region: Option<String>,
}

impl CustomerRange {
    fn shares_control_plane(&self, region: Option<&str>) -> bool {
        match (self.control_plane_region.as_deref(), region) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        }
    }
}

fn overlap(a: &Ipv4Net, b: &Ipv4Net) -> bool {
    a.contains(&b.network()) || b.contains(&a.network())
}

/// Every pair of different customers whose ranges overlap while they share a
/// control-plane region.
pub fn overlapping_pairs(ranges: &[CustomerRange]) -> Vec<(&CustomerRange, &CustomerRange)> {
    let mut pairs = Vec::new();
    for (i, a) in ranges.iter().enumerate() {
        for b in &ranges[i + 1..] {
            if a.customer != b.customer
                && a.shares_control_plane(b.control_plane_region.as_deref())
                && overlap(&a.range, &b.range)
            {
                pairs.push((a, b));
            }
        }
    }
    pairs
}

/// The customers whose range `range` overlaps, among those sharing `region`.
pub fn conflicts<'a>(
    ranges: &'a [CustomerRange],
    range: &Ipv4Net,
    region: Option<&str>,
) -> Vec<&'a CustomerRange> {
    ranges
        .iter()
        .filter(|r| r.shares_control_plane(region) && overlap(&r.range, range))
        .collect()
}

/// Why a range could not be allocated.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AllocationError {
    #[error("`cidr-prefix = {prefix}` cannot split the pool `{pool}`: it must be between {} and 32", pool.prefix_len())]
    Prefix { pool: Ipv4Net, prefix: u8 },
    #[error("every `/{prefix}` in the pool `{pool}` overlaps a customer reporting to the same control-plane region")]
    Exhausted { pool: Ipv4Net, prefix: u8 },
}

/// The first `/prefix` of `pool` that overlaps no range in `ranges` sharing `region`.
pub fn allocate(
    pool: Ipv4Net,
    prefix: u8,
    ranges: &[CustomerRange],
    region: Option<&str>,
) -> Result<Ipv4Net, AllocationError> {
    let subnets = pool
        .trunc()
        .subnets(prefix)
        .map_err(|_| AllocationError::Prefix { pool, prefix })?;
    let taken: Vec<&CustomerRange> = ranges
        .iter()
        .filter(|r| r.shares_control_plane(region))
        .collect();
    subnets
        .into_iter()
        .find(|candidate| !taken.iter().any(|r| overlap(&r.range, candidate)))
        .ok_or(AllocationError::Exhausted { pool, prefix })
}

/// What a new inputs file is filled with beside placeholders and defaults.
#[derive(Clone, Debug, Default)]
pub struct Known {
    /// Input name → value.
    pub values: BTreeMap<String, Value>,
}

/// The inputs file for a new customer: every input of the stack in the order its
/// files declare them, each with its description above it; known values set,
/// required inputs as placeholders, defaults as comments. Deprecated aliases are left
/// out, and so are sensitive inputs' values: those are given at apply time.
pub fn scaffold(customer: &str, stack: &str, module: &ModuleInterface, known: &Known) -> String {
    let mut out = format!(
        "# Inputs of customer `{customer}` for stack `{stack}`, written by `stackpack customer new`.\n\
         # Replace every `{PLACEHOLDER_PREFIX}…>` placeholder: `stackpack check` refuses this\n\
         # file until none is left. Commented inputs keep the default shown.\n"
    );
    let mut variables: Vec<&Variable> = module
        .variables
        .iter()
        .filter(|v| v.deprecated.is_none())
        .collect();
    variables.sort_by(|a, b| {
        (&a.location.file, a.location.line).cmp(&(&b.location.file, b.location.line))
    });
    for variable in variables {
        out.push('\n');
        if let Some(description) = variable.description.as_deref() {
            for line in description.trim().lines() {
                out.push_str(format!("# {line}").trim_end());
                out.push('\n');
            }
        }
        let name = &variable.name;
        if let Some(value) = known.values.get(name) {
            out.push_str(&format!("{name} = {}\n", hcl_value(value)));
            continue;
        }
        if variable.sensitive || variable.ephemeral {
            out.push_str(&format!(
                "# sensitive: give it at apply time (such as `TF_VAR_{name}`), never in this file\n"
            ));
            if variable.is_required() {
                out.push_str(&format!("# {name} = (required)\n"));
            }
            continue;
        }
        match &variable.default {
            DefaultValue::Required => {
                out.push_str(&format!(
                    "{name} = {}\n",
                    hcl_value(&Value::String(placeholder(&variable.type_expr.to_string())))
                ));
            }
            DefaultValue::Value(value) => {
                out.push_str(&format!("# {name} = {}   # default\n", hcl_value(value)));
            }
            DefaultValue::Expression(text) => {
                out.push_str(&format!("# {name} = {text}   # default\n"));
            }
        }
    }
    out
}

/// A value as HCL: JSON's syntax for strings, numbers, lists and objects is HCL too.
fn hcl_value(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(hcl_value).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{ {} }}",
            map.iter()
                .map(|(k, v)| format!("{} = {}", Value::String(k.clone()), hcl_value(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        // Templates would read `${` inside a string; HCL escapes it as `$${`.
        Value::String(s) => Value::String(s.clone()).to_string().replace("${", "$${"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(customer: &str, cidr: &str, region: Option<&str>) -> CustomerRange {
        CustomerRange {
            customer: customer.into(),
            file: format!("customers/{customer}/s.tfvars"),
            line: 1,
            range: cidr.parse().unwrap(),
            control_plane_region: region.map(str::to_string),
        }
    }

    #[test]
    fn ids_are_folder_and_dns_safe() {
        assert!(valid_id("hooli"));
        assert!(valid_id("c-42"));
        for bad in [
            "H",
            "Hooli",
            "1abc",
            "a",
            "ab_c",
            "abc-",
            "a.b",
            &"a".repeat(32),
        ] {
            assert!(!valid_id(bad), "{bad}");
        }
    }

    #[test]
    fn allocation_skips_ranges_of_the_same_control_plane_only() {
        let pool: Ipv4Net = "10.0.0.0/8".parse().unwrap();
        let taken = [
            range("a", "10.0.0.0/16", Some("us-east-1")),
            range("b", "10.1.128.0/20", Some("us-east-1")),
            range("c", "10.2.0.0/16", Some("eu-west-1")),
        ];
        assert_eq!(
            allocate(pool, 16, &taken, Some("us-east-1")).unwrap(),
            "10.2.0.0/16".parse().unwrap()
        );
        assert_eq!(
            allocate(pool, 16, &taken, Some("eu-west-1")).unwrap(),
            "10.0.0.0/16".parse().unwrap()
        );
        // Unknown region: clear of everyone.
        assert_eq!(
            allocate(pool, 16, &taken, None).unwrap(),
            "10.3.0.0/16".parse().unwrap()
        );
        assert!(matches!(
            allocate(pool, 7, &taken, None),
            Err(AllocationError::Prefix { .. })
        ));
        let small: Ipv4Net = "10.0.0.0/15".parse().unwrap();
        assert!(matches!(
            allocate(small, 16, &taken, Some("us-east-1")),
            Err(AllocationError::Exhausted { .. })
        ));
    }

    #[test]
    fn overlaps_are_pairs_of_different_customers_sharing_a_control_plane() {
        let ranges = [
            range("a", "10.0.0.0/16", Some("us-east-1")),
            range("b", "10.0.16.0/20", Some("us-east-1")),
            range("c", "10.0.0.0/16", Some("eu-west-1")),
            range("a", "10.0.16.0/24", Some("us-east-1")),
        ];
        let pairs: Vec<(&str, &str)> = overlapping_pairs(&ranges)
            .iter()
            .map(|(x, y)| (x.customer.as_str(), y.customer.as_str()))
            .collect();
        assert_eq!(pairs, [("a", "b"), ("b", "a")]);
    }

    #[test]
    fn values_are_written_as_hcl() {
        assert_eq!(
            hcl_value(&serde_json::json!({"a b": [1, "x"], "t": "${y}"})),
            r#"{ "a b" = [1, "x"], "t" = "$${y}" }"#
        );
    }
}
