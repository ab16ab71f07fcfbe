//! The bundle config is a format customers' runners read for years: its JSON is
//! guarded by a snapshot, so a change to it is a reviewed decision, not an accident.
//! Types travel structured (`{"list": {"object": …}}`), never as text to parse again.

use std::collections::BTreeMap;

use serde_json::json;
use stackpack_schema::bundle::{
    BundleConfig, Engine, EngineName, FileEntry, ModuleEntry, ProviderPackage, Source,
    WitnessCustomer, WitnessSummary, CONFIG_FORMAT, FILE_LAYERS_FORMAT,
};
use stackpack_schema::digest::Digest;
use stackpack_schema::interface::{Input, Interface, Output, ProviderRequirement};
use stackpack_schema::rules::{InterfaceChanges, InterfaceFinding, Rule};
use stackpack_schema::types::{ObjectAttr, TypeExpr};
use stackpack_schema::version::Bump;

fn sample() -> BundleConfig {
    let pools = TypeExpr::List(Box::new(TypeExpr::Object(BTreeMap::from([
        ("family".to_string(), ObjectAttr::required(TypeExpr::String)),
        (
            "max".to_string(),
            ObjectAttr {
                ty: TypeExpr::Number,
                optional: true,
                default: Some(json!(4)),
            },
        ),
        (
            "zones".to_string(),
            ObjectAttr {
                ty: TypeExpr::Set(Box::new(TypeExpr::String)),
                optional: true,
                default: None,
            },
        ),
    ]))));
    BundleConfig {
        format: CONFIG_FORMAT,
        stack: "data-plane".into(),
        version: semver::Version::parse("1.4.0").unwrap(),
        source: Source {
            repository: "https://git.acme.example/platform/acme-infra".into(),
            commit: "0123456789abcdef0123456789abcdef01234567".into(),
            branch: "main".into(),
        },
        created: "2026-11-30T12:00:00Z".into(),
        engine: Engine {
            name: Some(EngineName::Terraform),
            version_constraint: Some(">= 1.5.0".into()),
        },
        entrypoint: "stacks/data-plane".into(),
        interface: Interface {
            inputs: vec![
                Input {
                    name: "gpu_pools".into(),
                    type_constraint: pools,
                    required: false,
                    default: Some(json!([])),
                    sensitive: false,
                    nullable: true,
                    ephemeral: false,
                    description: Some("GPU node pools.".into()),
                    deprecated: None,
                    alias_of: None,
                    validations: vec!["length(var.gpu_pools) <= 8".into()],
                },
                Input {
                    name: "api_token".into(),
                    type_constraint: TypeExpr::String,
                    required: true,
                    default: None,
                    sensitive: true,
                    nullable: false,
                    ephemeral: false,
                    description: None,
                    deprecated: None,
                    alias_of: None,
                    validations: vec![],
                },
            ],
            outputs: vec![Output {
                name: "vpc_cidr".into(),
                sensitive: false,
                description: Some("The VPC's range.".into()),
            }],
            resource_kinds: vec!["aws_eks_cluster".into(), "aws_vpc".into()],
            required_version: Some(">= 1.5.0".into()),
            required_providers: BTreeMap::from([(
                "aws".to_string(),
                ProviderRequirement {
                    source: Some("hashicorp/aws".into()),
                    version: Some("~> 3.39".into()),
                },
            )]),
        },
        modules: vec![ModuleEntry {
            name: "network".into(),
            path: "modules/network".into(),
            version: Some("0.3.0".into()),
            digest: Digest::of(b"network"),
        }],
        files: vec![FileEntry {
            path: "stacks/data-plane/main.tf".into(),
            digest: Digest::of(b"main.tf"),
            size: 7,
            executable: false,
            layer: false,
        }],
        providers: vec![ProviderPackage {
            source: "registry.terraform.io/hashicorp/aws".into(),
            version: "3.39.0".into(),
            platform: "linux_amd64".into(),
            hash: "h1:goOMfGE4SjLps+hpxJFEM/pZFiNgvi6BMG8/w86+f6k=".into(),
            digest: Digest::of(b"zip"),
            size: 38_535_627,
        }],
        allowed_breaking: vec!["initech".into()],
        witness: Some(WitnessSummary {
            release: "1.3.2".into(),
            customers_total: 3,
            rules: Bump::Patch,
            witness: Bump::Major,
            accepted: Some(Bump::Major),
            customers: vec![
                WitnessCustomer {
                    customer: "globex".into(),
                    add: 0,
                    change: 1,
                    replace: 0,
                    destroy: 0,
                    resources: vec!["update module.network.aws_vpc.this".into()],
                },
                WitnessCustomer {
                    customer: "umbrella".into(),
                    add: 0,
                    change: 0,
                    replace: 0,
                    destroy: 0,
                    resources: vec![],
                },
            ],
        }),
        changes: Some(InterfaceChanges {
            since: semver::Version::parse("1.3.2").unwrap(),
            findings: vec![InterfaceFinding {
                rule: Rule::DefaultChanged,
                item: "node_count".into(),
                file: "stacks/data-plane/variables.tf".into(),
                line: 41,
                bump: Bump::Major,
                message: "input `node_count` changed its default from `3` to `4`".into(),
            }],
        }),
    }
}

#[test]
fn the_bundle_config_json_is_the_reviewed_format() {
    let value: serde_json::Value = serde_json::from_slice(&sample().to_bytes()).unwrap();
    insta::assert_json_snapshot!(value);
}

#[test]
fn a_bundle_config_reads_back_exactly_what_was_written() {
    let config = sample();
    let again: BundleConfig = serde_json::from_slice(&config.to_bytes()).unwrap();
    assert_eq!(again, config);
}

/// A bundle whose large binary travels as a layer of its own: format 2, and the
/// file's entry says `"layer": true`. Everything else reads as in format 1.
fn sample_with_file_layer() -> BundleConfig {
    let mut config = sample();
    config.files.push(FileEntry {
        path: "stacks/data-plane/lambda.zip".into(),
        digest: Digest::of(b"lambda.zip"),
        size: 4 << 20,
        executable: false,
        layer: true,
    });
    config.format = BundleConfig::required_format(&config.files);
    config
}

#[test]
fn a_bundle_config_with_a_file_layer_is_the_reviewed_format_two() {
    let config = sample_with_file_layer();
    assert_eq!(config.format, FILE_LAYERS_FORMAT);
    let value: serde_json::Value = serde_json::from_slice(&config.to_bytes()).unwrap();
    insta::assert_json_snapshot!(value);
    let again: BundleConfig = serde_json::from_slice(&config.to_bytes()).unwrap();
    assert_eq!(again, config);
}

#[test]
fn a_config_without_file_layers_keeps_format_one() {
    assert_eq!(
        BundleConfig::required_format(&sample().files),
        CONFIG_FORMAT
    );
}

/// Bundles built before the changes were recorded, and stacks with no stable release
/// to compare with, have no `changes` key: their configs keep their bytes.
#[test]
fn a_config_without_recorded_changes_has_no_changes_key() {
    let mut config = sample();
    config.changes = None;
    let value: serde_json::Value = serde_json::from_slice(&config.to_bytes()).unwrap();
    assert!(value.get("changes").is_none());
    let again: BundleConfig = serde_json::from_slice(&config.to_bytes()).unwrap();
    assert_eq!(again.changes, None);
}

/// A config from a newer packager may name a rule this build does not know: the
/// bundle still reads (a runner must deploy it), only the record of changes is lost.
#[test]
fn a_config_naming_an_unknown_rule_still_reads_without_its_changes() {
    let mut value: serde_json::Value = serde_json::from_slice(&sample().to_bytes()).unwrap();
    value["changes"]["findings"][0]["rule"] = json!("a-rule-from-the-future");
    let config: BundleConfig = serde_json::from_value(value).unwrap();
    assert_eq!(config.changes, None);
    assert_eq!(config.stack, "data-plane");
}
