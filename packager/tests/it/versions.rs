//! Change detection through module dependencies, and version numbering on main and
//! on branches, with the real `stackpack` binary on real git repositories.

use crate::common;

use common::TestRepo;
use semver::Version;

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// The entry of `stack` in a `build` or `version` report.
fn entry<'a>(report: &'a serde_json::Value, stack: &str) -> &'a serde_json::Value {
    report["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stack"] == stack)
        .unwrap_or_else(|| panic!("no stack `{stack}` in {report}"))
}

#[test]
fn first_build_on_main_releases_every_stack_at_the_initial_version() {
    let repo = TestRepo::new();
    let report = repo.build(&[]);
    assert_eq!(report["channel"], "stable");
    assert_eq!(
        TestRepo::built(&report),
        pairs(&[
            ("cluster", "0.1.0"),
            ("control-plane", "0.1.0"),
            ("data-plane", "0.1.0"),
            ("gpu-pools", "0.1.0"),
            ("model-storage", "0.1.0"),
            ("network", "0.1.0"),
        ])
    );
}

#[test]
fn a_module_change_rebuilds_every_stack_that_uses_it_and_a_stack_change_only_that_stack() {
    let repo = TestRepo::new();
    repo.build(&[]);

    repo.append(
        "modules/network/main.tf",
        "\n# A comment that changes the module.\n",
    );
    repo.commit("network: comment");
    let report = repo.build(&[]);
    assert_eq!(
        TestRepo::built(&report),
        pairs(&[
            ("control-plane", "0.1.1"),
            ("data-plane", "0.1.1"),
            ("network", "0.1.1")
        ])
    );
    let reason = entry(&report, "control-plane")["reason"].as_str().unwrap();
    assert!(reason.contains("`network`"), "{reason}");

    repo.append(
        "stacks/control-plane/main.tf",
        "\n# Only the control plane.\n",
    );
    repo.commit("control-plane: comment");
    let report = repo.build(&[]);
    assert_eq!(
        TestRepo::built(&report),
        pairs(&[("control-plane", "0.1.2")])
    );
    assert_eq!(entry(&report, "data-plane")["built"], false);
    assert_eq!(entry(&report, "data-plane")["version"], "0.1.1");

    // gpu-pool is used only by the data plane and the GPU pools.
    repo.append("modules/gpu-pool/main.tf", "\n# GPUs.\n");
    repo.commit("gpu-pool: comment");
    let report = repo.build(&[]);
    assert_eq!(
        TestRepo::built(&report),
        pairs(&[("data-plane", "0.1.2"), ("gpu-pools", "0.1.1")])
    );
}

#[test]
fn a_transitive_module_dependency_counts_as_a_change() {
    let repo = TestRepo::new();
    // cluster now uses a new `labels` module; only cluster's users see it.
    repo.write(
        "modules/labels/main.tf",
        "variable \"name\" {\n  type        = string\n  description = \"Name.\"\n}\n\noutput \"tags\" {\n  value = { Name = var.name }\n}\n",
    );
    repo.append(
        "modules/cluster/main.tf",
        "\nmodule \"labels\" {\n  source = \"../labels\"\n  name   = var.name\n}\n",
    );
    repo.commit("cluster uses labels");
    repo.build(&[]);
    repo.append("modules/labels/main.tf", "\n# changed\n");
    repo.commit("labels: comment");
    let report = repo.build(&[]);
    assert_eq!(
        TestRepo::built(&report),
        pairs(&[
            ("cluster", "0.1.1"),
            ("control-plane", "0.1.1"),
            ("data-plane", "0.1.1")
        ])
    );
}

#[test]
fn rebuilding_an_unchanged_commit_gives_the_same_digest_and_no_new_version() {
    let repo = TestRepo::new();
    let first = repo.build(&[]);
    let second = repo.build(&[]);
    assert!(TestRepo::built(&second).is_empty());
    for index in 0..2 {
        assert_eq!(
            first["stacks"][index]["digest"],
            second["stacks"][index]["digest"]
        );
        assert_eq!(
            first["stacks"][index]["version"],
            second["stacks"][index]["version"]
        );
    }
    // Touching a file without changing it is not a change either.
    repo.commit_empty("empty");
    assert!(TestRepo::built(&repo.build(&[])).is_empty());
}

#[test]
fn prereleases_on_a_branch_count_up_by_semver_precedence_past_nine() {
    let repo = TestRepo::new();
    repo.build(&[]);
    repo.checkout_new("feature/Add_GPU.pool");
    let mut versions = Vec::new();
    for n in 1..=10 {
        repo.append("stacks/data-plane/main.tf", &format!("\n# change {n}\n"));
        repo.commit(&format!("change {n}"));
        let report = repo.build(&["--stack", "data-plane"]);
        let built = TestRepo::built(&report);
        assert_eq!(built.len(), 1);
        versions.push(Version::parse(&built[0].1).unwrap());
    }
    assert_eq!(versions[0].to_string(), "0.1.1-feature-add-gpu-pool.1");
    assert_eq!(versions[1].to_string(), "0.1.1-feature-add-gpu-pool.2");
    assert_eq!(versions[2].to_string(), "0.1.1-feature-add-gpu-pool.3");
    assert_eq!(versions[9].to_string(), "0.1.1-feature-add-gpu-pool.10");
    for pair in versions.windows(2) {
        assert_eq!(pair[0].cmp_precedence(&pair[1]), std::cmp::Ordering::Less);
    }
    // The next would be .11, and stable builds from main are untouched.
    let plan = repo
        .run(&["version", "--json", "--stack", "data-plane"])
        .ok()
        .json();
    assert_eq!(plan["stacks"][0]["changed"], false);
    assert_eq!(
        plan["stacks"][0]["current"],
        "0.1.1-feature-add-gpu-pool.10"
    );
}

#[test]
fn a_bump_request_raises_the_base_of_prereleases_and_stable_versions() {
    let repo = TestRepo::new();
    repo.build(&[]);
    repo.append("stacks/data-plane/main.tf", "\n# breaking, by hand\n");
    repo.commit("breaking");
    let plan = repo
        .run(&["version", "--json", "--bump", "major"])
        .ok()
        .json();
    assert_eq!(entry(&plan, "data-plane")["next"], "1.0.0");
    let plan = repo
        .run(&["version", "--json", "--bump", "minor", "--branch", "pr/7"])
        .ok()
        .json();
    assert_eq!(entry(&plan, "data-plane")["next"], "0.2.0-pr-7.1");
}

#[test]
fn branch_names_of_every_shape_make_valid_ordered_prereleases() {
    let repo = TestRepo::new();
    repo.build(&[]);
    repo.append("stacks/control-plane/main.tf", "\n# x\n");
    repo.commit("x");
    let cases = [
        ("feature/login", "0.1.1-feature-login.1"),
        ("fix_the_BUG", "0.1.1-fix-the-bug.1"),
        ("release.2026.11", "0.1.1-release-2026-11.1"),
        ("1234", "0.1.1-b1234.1"),
        (
            "Dependabot/Terraform/hashicorp--aws-5.0",
            "0.1.1-dependabot-terraform-hashicorp--aws-5-0.1",
        ),
    ];
    for (branch, expected) in cases {
        let plan = repo
            .run(&[
                "version",
                "--json",
                "--branch",
                branch,
                "--stack",
                "control-plane",
            ])
            .ok()
            .json();
        assert_eq!(plan["stacks"][0]["next"], expected, "branch {branch}");
        Version::parse(expected).unwrap();
    }
}

#[test]
fn the_branch_comes_from_ci_variables_before_git() {
    let repo = TestRepo::new();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_stackpack"))
        .current_dir(&repo.dir)
        .args(["version", "--json"])
        .env("GITHUB_HEAD_REF", "feature/from-ci")
        .output()
        .unwrap();
    let plan: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(plan["branch"], "feature/from-ci");
    assert_eq!(plan["stacks"][0]["next"], "0.1.0-feature-from-ci.1");
}

#[test]
fn stable_versions_on_main_follow_merged_branches() {
    let repo = TestRepo::new();
    repo.build(&[]);
    repo.checkout_new("feature/x");
    repo.append("stacks/data-plane/main.tf", "\n# feature\n");
    repo.commit("feature");
    assert_eq!(
        TestRepo::built(&repo.build(&[])),
        pairs(&[("data-plane", "0.1.1-feature-x.1")])
    );
    repo.checkout("main");
    common::git(
        &repo.dir,
        &["merge", "-q", "--no-ff", "-m", "merge", "feature/x"],
    );
    assert_eq!(
        TestRepo::built(&repo.build(&[])),
        pairs(&[("data-plane", "0.1.1")])
    );
}

#[test]
fn base_ref_limits_changes_to_what_git_shows_since_then() {
    let repo = TestRepo::new();
    repo.build(&[]);
    let base = common::git(&repo.dir, &["rev-parse", "HEAD"])
        .trim()
        .to_string();
    repo.append("modules/model-bucket/main.tf", "\n# bucket\n");
    repo.commit("bucket");
    let plan = repo
        .run(&["version", "--json", "--base", &base])
        .ok()
        .json();
    // model-bucket is used by the data plane and model storage only.
    for stack in ["cluster", "control-plane", "gpu-pools", "network"] {
        assert_eq!(entry(&plan, stack)["changed"], false, "{stack}: {plan}");
    }
    for stack in ["data-plane", "model-storage"] {
        assert_eq!(entry(&plan, stack)["changed"], true, "{stack}: {plan}");
    }
    let bad = repo.run(&["version", "--base", "no-such-ref"]);
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr.contains("`--base no-such-ref`"),
        "{}",
        bad.stderr
    );
}

trait EmptyCommit {
    fn commit_empty(&self, message: &str);
}

impl EmptyCommit for TestRepo {
    fn commit_empty(&self, message: &str) {
        common::git(&self.dir, &["commit", "-q", "--allow-empty", "-m", message]);
    }
}

#[test]
fn interface_changes_choose_the_bump_and_a_smaller_requested_bump_is_refused() {
    let repo = TestRepo::new();
    repo.build(&[]);

    // An input with a default: minor for the stack that gains it.
    repo.append(
        "stacks/data-plane/variables.tf",
        "\nvariable \"log_retention_days\" {\n  type        = number\n  default     = 30\n  description = \"Days to keep logs.\"\n}\n",
    );
    repo.commit("data-plane: log retention input");
    assert_eq!(
        TestRepo::built(&repo.build(&[])),
        pairs(&[("data-plane", "0.2.0")])
    );

    // A module default that no stack sets: a different plan for every caller.
    let variables = std::fs::read_to_string(repo.dir.join("modules/cluster/variables.tf")).unwrap();
    repo.write(
        "modules/cluster/variables.tf",
        &variables.replace("default     = 3", "default     = 5"),
    );
    repo.commit("cluster: five system nodes");
    let refused = repo.run(&[
        "build",
        "--bump",
        "minor",
        "--key",
        repo.key.to_str().unwrap(),
    ]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("needs a major release"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("modules/cluster/variables.tf:"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("hint: publish with `--bump major`"),
        "{}",
        refused.stderr
    );
    assert_eq!(
        TestRepo::built(&repo.build(&[])),
        pairs(&[
            ("cluster", "1.0.0"),
            ("control-plane", "1.0.0"),
            ("data-plane", "1.0.0")
        ])
    );
}

/// The bundle config `stack` was built with, in the layout of `repo`.
fn built_config(
    repo: &TestRepo,
    report: &serde_json::Value,
    stack: &str,
) -> stackpack_schema::bundle::BundleConfig {
    let blob = |digest: &str| {
        std::fs::read(
            repo.layout()
                .join("blobs/sha256")
                .join(digest.trim_start_matches("sha256:")),
        )
        .unwrap()
    };
    let entry = report["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stack"] == stack)
        .unwrap();
    let manifest: serde_json::Value =
        serde_json::from_slice(&blob(entry["digest"].as_str().unwrap())).unwrap();
    serde_json::from_slice(&blob(manifest["config"]["digest"].as_str().unwrap())).unwrap()
}

/// The support page shows what the packager decided, so the build records it in
/// the signed config: each finding's rule, item, `file:line` and bump, and the
/// release it compared with. A first release had nothing to compare with.
#[test]
fn a_built_bundle_records_the_interface_findings_its_version_was_decided_by() {
    use stackpack_schema::rules::Rule;
    use stackpack_schema::version::Bump;

    let repo = TestRepo::new();
    let first = repo.build(&[]);
    assert_eq!(built_config(&repo, &first, "data-plane").changes, None);

    let path = "stacks/data-plane/variables.tf";
    let variables = std::fs::read_to_string(repo.dir.join(path)).unwrap();
    repo.write(
        path,
        &variables.replace(
            "default     = [\"a\", \"b\", \"c\"]",
            "default     = [\"a\", \"b\"]",
        ),
    );
    repo.commit("data-plane: two zones by default");
    let report = repo.build(&[]);
    assert_eq!(TestRepo::built(&report), pairs(&[("data-plane", "1.0.0")]));
    let changes = built_config(&repo, &report, "data-plane")
        .changes
        .expect("the build records what it compared");
    assert_eq!(changes.since, Version::new(0, 1, 0));
    let [finding] = changes.findings.as_slice() else {
        panic!("one finding: {:?}", changes.findings);
    };
    assert_eq!(finding.rule, Rule::DefaultChanged);
    assert_eq!(finding.item, "availability_zones");
    assert_eq!(finding.location(), format!("{path}:26"));
    assert_eq!(finding.bump, Bump::Major);
    assert!(
        finding.message.contains(r#"`["a","b","c"]`"#)
            && finding.message.contains(r#"`["a","b"]`"#),
        "before and after: {}",
        finding.message
    );
}
