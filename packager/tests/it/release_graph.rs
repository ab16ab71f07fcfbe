//! `stackpack check` proves the release graph: the releases of `stackpack.toml`, the
//! `depends-on` and `[inputs.from]` of each `stack.toml`, and the customers' inputs
//! files beside them. Each bad input is refused (exit 1) with the file and line of
//! what to fix; a wired output removed or retyped since the base is a major change of
//! the release naming the input it breaks.
//!
//! The repository is small and made here: `network` → `cluster` (and `storage`,
//! outside the release), each a `terraform_data` stack.

use std::path::PathBuf;

use stackpack_packager::check::Cache;
use stackpack_packager::config::RepoConfig;
use stackpack_packager::release::graph::{wiring_breaks, OutputChange, ReleaseGraph};
use stackpack_schema::release::ReleaseChangeKind;
use stackpack_schema::version::Bump;

use crate::common::{self, git, Run};

const STACKPACK_TOML: &str = r#"stacks = ["stacks/*"]

[releases.environment]
description = "a customer's data plane"
stacks = [
  "network",
  "cluster",
]

[releases.environment.services]
inference = "registry.acme.example/acme/inference:1.4.2"
"#;

const NETWORK_TF: &str = r#"variable "vpc_cidr" {
  type        = string
  description = "The customer's range."
  default     = "10.0.0.0/16"
}

variable "subnets" {
  type        = list(string)
  description = "Subnet ranges."
  default     = ["10.0.1.0/24"]
}

resource "terraform_data" "vpc" {
  input = var.vpc_cidr
}

output "vpc_id" {
  value = terraform_data.vpc.id
}

output "subnet_ids" {
  value = var.subnets
}

output "name" {
  value = "network"
}
"#;

const CLUSTER_TOML: &str = r#"description = "the cluster"
depends-on = ["network"]

[inputs.from]
vpc_id = "network.vpc_id"
subnet_ids = "network.subnet_ids"
"#;

const CLUSTER_TF: &str = r#"variable "vpc_id" {
  type        = string
  description = "From network."
}

variable "subnet_ids" {
  type        = list(string)
  description = "From network."
}

variable "node_count" {
  type        = number
  description = "Nodes."
  default     = 2
}

resource "terraform_data" "cluster" {
  input = [var.vpc_id, var.subnet_ids, var.node_count]
}
"#;

/// A vendor repository with release `environment` = `network` → `cluster`, a
/// `storage` stack in no release, and customer `globex`; committed on `main`.
struct Graph {
    _temp: tempfile::TempDir,
    root: PathBuf,
}

impl Graph {
    fn new() -> Graph {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().join("vendor");
        let graph = Graph { _temp: temp, root };
        graph.write("stackpack.toml", STACKPACK_TOML);
        graph.write(
            "stacks/network/stack.toml",
            "description = \"the network\"\n",
        );
        graph.write("stacks/network/main.tf", NETWORK_TF);
        graph.write("stacks/cluster/stack.toml", CLUSTER_TOML);
        graph.write("stacks/cluster/main.tf", CLUSTER_TF);
        graph.write("stacks/storage/stack.toml", "description = \"buckets\"\n");
        graph.write(
            "stacks/storage/main.tf",
            "resource \"terraform_data\" \"bucket\" {}\n\noutput \"bucket\" {\n  value = terraform_data.bucket.id\n}\n",
        );
        graph.write(
            "customers/globex/network.tfvars",
            "vpc_cidr = \"10.40.0.0/16\"\n",
        );
        // The wired inputs are required, and not set: the release sets them.
        graph.write("customers/globex/cluster.tfvars", "node_count = 3\n");
        graph.write(".gitignore", ".stackpack/\n");
        git(&graph.root, &["init", "-q", "-b", "main"]);
        graph.commit("initial");
        graph
    }

    fn write(&self, path: &str, text: &str) {
        let path = self.root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn edit(&self, path: &str, f: impl FnOnce(String) -> String) {
        let text = std::fs::read_to_string(self.root.join(path)).unwrap();
        self.write(path, &f(text));
    }

    fn commit(&self, message: &str) {
        git(&self.root, &["add", "-A"]);
        git(&self.root, &["commit", "-q", "-m", message]);
    }

    /// `stackpack check --against HEAD` with `flags`.
    fn check(&self, flags: &[&str]) -> Run {
        let mut args = vec!["check", "--against", "HEAD"];
        args.extend_from_slice(flags);
        common::stackpack(&self.root, &args)
    }

    /// `check --json`: the exit code, and the release's findings as
    /// `(rule, file:line, message)`.
    fn findings(&self) -> (i32, Vec<(String, String, String)>) {
        let run = self.check(&["--json"]);
        let json = run.json();
        let findings = json["releases"][0]["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                let line = f["line"].as_u64().unwrap();
                (
                    f["rule"].as_str().unwrap().to_string(),
                    format!("{}:{line}", f["file"].as_str().unwrap()),
                    f["message"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        (run.code, findings)
    }
}

fn one_finding(graph: &Graph, rule: &str) -> (String, String) {
    let (code, findings) = graph.findings();
    assert_eq!(code, 1, "a broken graph refuses the check: {findings:?}");
    let matching: Vec<_> = findings.iter().filter(|f| f.0 == rule).collect();
    assert_eq!(matching.len(), 1, "{findings:?}");
    (matching[0].1.clone(), matching[0].2.clone())
}

#[test]
fn a_good_release_graph_passes_with_its_apply_order_and_customers_need_not_set_wired_inputs() {
    let graph = Graph::new();
    let run = graph.check(&["--json"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let json = run.json();
    let release = &json["releases"][0];
    assert_eq!(release["release"], "environment");
    assert_eq!(release["stacks"], serde_json::json!(["network", "cluster"]));
    assert_eq!(release["services"], serde_json::json!(["inference"]));
    assert_eq!(release["refused"], false);
    assert_eq!(release["findings"], serde_json::json!([]));
    assert_eq!(
        common::customer_error_rules(&json, "globex"),
        Vec::<String>::new()
    );

    let human = graph.check(&[]);
    assert_eq!(human.code, 0, "{}", human.stderr);
    assert!(
        human
            .stdout
            .contains("environment  ok      1         network → cluster"),
        "{}",
        human.stdout
    );
}

#[test]
fn a_cycle_is_refused_naming_each_step_and_its_stack_toml() {
    let graph = Graph::new();
    graph.write(
        "stacks/network/stack.toml",
        "description = \"the network\"\ndepends-on = [\"cluster\"]\n",
    );
    let (at, message) = one_finding(&graph, "dependency-cycle");
    assert_eq!(at, "stacks/cluster/stack.toml:2");
    assert_eq!(
        message,
        "the stacks of release `environment` depend on each other in a cycle: cluster → network → cluster \
         (`stacks/cluster/stack.toml:2`, `stacks/network/stack.toml:2`)"
    );
    let run = graph.check(&[]);
    assert!(
        run.stderr
            .contains("error: release `environment` cannot be published: its graph is broken"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("rule: dependency-cycle"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_wiring_to_a_missing_output_is_refused_with_the_outputs_there_are() {
    let graph = Graph::new();
    graph.edit("stacks/cluster/stack.toml", |t| {
        t.replace("network.vpc_id", "network.vpc")
    });
    let (at, message) = one_finding(&graph, "wired-output-missing");
    assert_eq!(at, "stacks/cluster/stack.toml:5");
    assert_eq!(
        message,
        "input `vpc_id` of stack `cluster` is wired to `network.vpc`, but stack `network` has no output `vpc` \
         (outputs: `name`, `subnet_ids`, `vpc_id`)"
    );
}

#[test]
fn a_wiring_to_a_missing_input_is_refused_with_a_did_you_mean() {
    let graph = Graph::new();
    graph.edit("stacks/cluster/stack.toml", |t| {
        t.replace("vpc_id =", "vpc_idd =")
    });
    let (at, message) = one_finding(&graph, "wired-input-missing");
    assert_eq!(at, "stacks/cluster/stack.toml:5");
    assert_eq!(
        message,
        "`[inputs.from]` wires `network.vpc_id` to `vpc_idd`, which is not an input of stack `cluster`; did you mean `vpc_id`?"
    );
}

#[test]
fn a_release_naming_a_missing_stack_is_refused_at_its_line() {
    let graph = Graph::new();
    graph.edit("stackpack.toml", |t| {
        t.replace("  \"cluster\",\n", "  \"cluster\",\n  \"gpu-pool\",\n")
    });
    let (at, message) = one_finding(&graph, "release-stack-missing");
    assert_eq!(at, "stackpack.toml:8");
    assert_eq!(
        message,
        "release `environment` lists stack `gpu-pool`, which is not a stack of this repository \
         (stacks: `cluster`, `network`, `storage`)"
    );
}

#[test]
fn a_dependency_outside_the_release_is_refused_naming_both_stacks() {
    let graph = Graph::new();
    graph.edit("stacks/cluster/stack.toml", |t| {
        t.replace(
            "depends-on = [\"network\"]",
            "depends-on = [\"network\", \"storage\"]",
        )
    });
    let (at, message) = one_finding(&graph, "dependency-outside-release");
    assert_eq!(at, "stacks/cluster/stack.toml:2");
    assert_eq!(
        message,
        "stack `cluster` (in release `environment`) depends on `storage`, which release `environment` does not list; \
         add it to `[releases.environment] stacks`"
    );
}

#[test]
fn a_release_named_like_a_stack_is_refused() {
    let graph = Graph::new();
    graph.edit("stackpack.toml", |t| {
        t.replace("releases.environment", "releases.storage")
    });
    let (code, findings) = graph.findings();
    assert_eq!(code, 1);
    assert_eq!(
        findings,
        [(
            "release-named-like-stack".to_string(),
            "stackpack.toml:3".to_string(),
            "release `storage` has the name of stack `storage` (`stacks/storage`): releases and stacks share one namespace; rename the release".to_string()
        )]
    );
}

#[test]
fn a_wired_output_of_a_type_the_input_does_not_take_is_refused() {
    let graph = Graph::new();
    graph.edit("stacks/cluster/stack.toml", |t| {
        t.replace(
            "vpc_id = \"network.vpc_id\"",
            "vpc_id = \"network.subnet_ids\"",
        )
    });
    let (at, message) = one_finding(&graph, "wired-type-mismatch");
    assert_eq!(at, "stacks/cluster/stack.toml:5");
    assert_eq!(
        message,
        "input `vpc_id` of stack `cluster` must be `string`, but `network.subnet_ids` is `list(string)` (`stacks/network/main.tf:21`)"
    );
}

#[test]
fn a_wired_output_whose_type_cannot_be_known_is_accepted() {
    let graph = Graph::new();
    // `terraform_data.vpc.id` has a type only a plan knows: the engine checks it.
    graph.edit("stacks/cluster/stack.toml", |t| {
        t.replace(
            "subnet_ids = \"network.subnet_ids\"",
            "subnet_ids = \"network.vpc_id\"",
        )
    });
    let (code, findings) = graph.findings();
    assert_eq!((code, findings), (0, vec![]));
}

#[test]
fn a_customer_setting_a_wired_input_is_refused_naming_the_file_line_and_wiring() {
    let graph = Graph::new();
    graph.write(
        "customers/globex/cluster.tfvars",
        "node_count = 3\nvpc_id     = \"vpc-123\"\n",
    );
    let run = graph.check(&["--json"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let json = run.json();
    let report = json["customers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["file"] == "customers/globex/cluster.tfvars")
        .unwrap();
    let finding = &report["findings"][0];
    assert_eq!(finding["rule"], "wired-input-set");
    assert_eq!(finding["line"], 2);
    assert_eq!(
        finding["message"],
        "input `vpc_id` of stack `cluster` is set from `network.vpc_id` (`[inputs.from]` in `stacks/cluster/stack.toml`): remove it from this file"
    );
}

#[test]
fn a_removed_wired_output_is_a_major_change_naming_the_input_it_breaks() {
    let graph = Graph::new();
    graph.edit("stacks/network/main.tf", |t| {
        t.replace(
            "output \"vpc_id\" {\n  value = terraform_data.vpc.id\n}\n",
            "",
        )
    });
    let (code, findings) = graph.findings();
    // Still wired, so the graph is broken too: both are said.
    assert_eq!(code, 1);
    assert!(
        findings.iter().any(|f| f.0 == "wired-output-missing"),
        "{findings:?}"
    );
    let broken: Vec<_> = findings.iter().filter(|f| f.0 == "wiring-broken").collect();
    assert_eq!(
        broken,
        [&(
            "wiring-broken".to_string(),
            "stacks/cluster/stack.toml:5".to_string(),
            "`network` no longer has output `vpc_id`, which sets input `vpc_id` of `cluster` in release `environment`".to_string()
        )]
    );
    let json = graph.check(&["--json"]).json();
    assert_eq!(json["releases"][0]["bump"], "major");
    assert_eq!(
        json["releases"][0]["findings"][1]["bump"], "major",
        "{json}"
    );
}

#[test]
fn a_retyped_wired_output_is_a_major_change_of_the_release_for_publishing() {
    let graph = Graph::new();
    let base = git(&graph.root, &["rev-parse", "HEAD"]).trim().to_string();
    // Still fits the input (a set converts to a list), so the graph holds.
    graph.edit("stacks/network/main.tf", |t| {
        t.replace("type        = list(string)", "type        = set(string)")
    });
    let run = graph.check(&["--json"]);
    assert_eq!(
        run.code, 0,
        "a break is a bump, not a refusal: {}",
        run.stderr
    );
    let json = run.json();
    assert_eq!(json["releases"][0]["bump"], "major");
    assert_eq!(
        json["releases"][0]["findings"][0]["message"],
        "output `subnet_ids` of `network` changed its type from `list(string)` to `set(string)`, which sets input `subnet_ids` of `cluster` in release `environment`"
    );

    // What the publish step calls.
    let config = RepoConfig::load(&graph.root).unwrap();
    let release_graph = ReleaseGraph::load(&graph.root, &config).unwrap();
    let bases = [("network".to_string(), base)].into();
    let breaks = wiring_breaks(&graph.root, &release_graph, &bases, &mut Cache::default()).unwrap();
    assert_eq!(breaks.len(), 1);
    assert_eq!(breaks[0].input, "subnet_ids");
    assert!(matches!(breaks[0].change, OutputChange::Retyped { .. }));
    let change = breaks[0].to_change();
    assert_eq!(change.kind, ReleaseChangeKind::WiringBroken);
    assert_eq!(change.bump, Bump::Major);
    assert_eq!(change.part, "environment");
}

#[test]
fn a_service_reference_with_credentials_is_refused_without_repeating_it() {
    let graph = Graph::new();
    graph.edit("stackpack.toml", |t| {
        t.replace(
            "registry.acme.example/acme/inference:1.4.2",
            "ci:hunter2@registry.acme.example/acme/inference:1.4.2",
        )
    });
    let (at, message) = one_finding(&graph, "service-reference-invalid");
    assert_eq!(at, "stackpack.toml:11");
    assert!(
        message.contains("service `inference` of release `environment` is not an OCI reference"),
        "{message}"
    );
    assert!(message.contains("credentials"), "{message}");
    assert!(!message.contains("hunter2"), "{message}");
}

#[test]
fn a_malformed_wiring_is_a_usage_error_at_its_line() {
    let graph = Graph::new();
    graph.edit("stacks/cluster/stack.toml", |t| {
        t.replace("\"network.vpc_id\"", "\"network\"")
    });
    let run = graph.check(&[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("stacks/cluster/stack.toml:5"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("`network` is not `STACK.OUTPUT`"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_sensitive_output_wired_to_a_plain_input_is_a_warning_not_a_refusal() {
    let graph = Graph::new();
    graph.edit("stacks/network/main.tf", |t| {
        t.replace(
            "  value = terraform_data.vpc.id\n",
            "  value     = terraform_data.vpc.id\n  sensitive = true\n",
        )
    });
    let run = graph.check(&["--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let finding = &run.json()["releases"][0]["findings"][0];
    assert_eq!(finding["rule"], "wired-sensitive-output");
    assert_eq!(finding["severity"], "warning");
    assert_eq!(
        finding["message"],
        "sensitive output `network.vpc_id` sets input `vpc_id` of stack `cluster`, which is not `sensitive = true`: plans would show the value"
    );
}

#[test]
fn a_broken_graph_is_annotated_at_its_file_and_line_for_ci() {
    let graph = Graph::new();
    graph.edit("stacks/cluster/stack.toml", |t| {
        t.replace("network.vpc_id", "network.vpc")
    });
    let run = graph.check(&["--format", "github"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout.contains(
            "::error file=stacks/cluster/stack.toml,line=5,title=wired-output-missing::input `vpc_id` of stack `cluster` is wired to `network.vpc`"
        ),
        "{}",
        run.stdout
    );
}
