//! `stackpack customer new`: a new customer's inputs file in one step, refused by
//! `check` until its placeholders are filled, and network ranges that never overlap a
//! customer reporting to the same control-plane region. The real `stackpack` binary
//! on temporary git repositories copied from `examples/acme-infra`.

use crate::common;

use common::customer_error_rules as rules_of;
use common::TestRepo;

/// The example repository, whose `stackpack.toml` has a pool of customer ranges.
fn with_pool() -> TestRepo {
    let repo = TestRepo::new();
    let config = read(&repo, "stackpack.toml");
    assert!(config.contains("cidr-pool = \"10.0.0.0/8\""), "{config}");
    repo
}

fn read(repo: &TestRepo, path: &str) -> String {
    std::fs::read_to_string(repo.dir.join(path)).unwrap()
}

/// `a.b.c.d/n` as the first and last address it holds.
fn bounds(cidr: &str) -> (u32, u32) {
    let (addr, prefix) = cidr.split_once('/').unwrap();
    let addr = addr.split('.').fold(0u32, |acc, octet| {
        (acc << 8) | octet.parse::<u32>().unwrap()
    });
    let prefix: u32 = prefix.parse().unwrap();
    let size = if prefix == 0 {
        u32::MAX
    } else {
        (1u32 << (32 - prefix)) - 1
    };
    (addr & !size, (addr & !size) | size)
}

fn value_of(text: &str, input: &str) -> Option<String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .find(|(k, _)| k.trim() == input)
        .map(|(_, v)| v.trim().trim_matches('"').to_string())
}

#[test]
fn the_scaffold_is_refused_by_check_until_its_placeholders_are_filled() {
    let repo = with_pool();
    let json = repo
        .run(&[
            "customer",
            "new",
            "hooli",
            "--stack",
            "data-plane",
            "--region",
            "us-east-1",
            "--control-plane-region",
            "us-east-1",
            "--cidr",
            "auto",
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(json["file"], "customers/hooli/data-plane.tfvars");
    // `globex` holds 10.40.0.0/16 in `us-east-1`: the first /16 of the pool is free.
    assert_eq!(json["cidr"], "10.0.0.0/16");
    assert_eq!(
        json["placeholders"],
        serde_json::json!(["account_id", "kubernetes_version"])
    );

    let text = read(&repo, "customers/hooli/data-plane.tfvars");
    for expected in [
        "# The customer's identifier, lowercase letters and digits.\ncustomer_id = \"hooli\"\n",
        "# The customer's cloud account id (12 digits).\naccount_id = \"<fill in: string>\"\n",
        "region = \"us-east-1\"\n",
        "vpc_cidr = \"10.0.0.0/16\"\n",
        "# Availability zone suffixes, appended to the region.\n# availability_zones = [\"a\", \"b\", \"c\"]   # default\n",
        "# gpu_families = []   # default\n",
        "control_plane_region = \"us-east-1\"\n",
    ] {
        assert!(text.contains(expected), "{expected}\nnot in:\n{text}");
    }

    let line = text
        .lines()
        .position(|l| l.starts_with("account_id = "))
        .unwrap()
        + 1;
    let refused = repo.run(&["check", "--json"]).code(1);
    assert_eq!(
        rules_of(&refused.json(), "hooli"),
        ["placeholder-not-filled", "placeholder-not-filled"]
    );
    assert!(
        refused.stderr.contains(&format!(
            "`customers/hooli/data-plane.tfvars:{line}`: input `account_id` is still the placeholder `<fill in: string>`"
        )),
        "{}",
        refused.stderr
    );
    assert!(
        refused
            .stderr
            .contains("the inputs of 1 customer still hold placeholders: `hooli`"),
        "{}",
        refused.stderr
    );

    let filled = text
        .replace(
            "account_id = \"<fill in: string>\"",
            "account_id = \"123456789012\"",
        )
        .replace(
            "kubernetes_version = \"<fill in: string>\"",
            "kubernetes_version = \"1.30\"",
        );
    repo.write("customers/hooli/data-plane.tfvars", &filled);
    let json = repo.run(&["check", "--json"]).ok().json();
    assert!(rules_of(&json, "hooli").is_empty(), "{json}");
}

/// Runs `stackpack customer new ARGS…`, expecting exit `code`, each of `said` in its
/// errors, and no folder `customers/<id>` left behind.
fn refused(repo: &TestRepo, args: &[&str], code: i32, said: &[&str], id: &str) {
    let mut all = vec!["customer", "new"];
    all.extend_from_slice(args);
    let run = repo.run(&all).code(code);
    for text in said {
        assert!(run.stderr.contains(text), "{text}\nnot in:\n{}", run.stderr);
    }
    assert!(!repo.dir.join("customers").join(id).exists());
}

#[test]
fn a_bad_id_an_unknown_stack_and_an_existing_customer_are_refused_and_nothing_is_written() {
    let repo = with_pool();
    refused(
        &repo,
        &["Hooli_1", "--stack", "data-plane"],
        2,
        &[
            "`Hooli_1` is not a valid customer id",
            "lowercase letters, digits and `-`",
        ],
        "Hooli_1",
    );
    refused(
        &repo,
        &["hooli", "--stack", "nope"],
        2,
        &["there is no stack named `nope`"],
        "hooli",
    );

    let before = read(&repo, "customers/globex/data-plane.tfvars");
    let existing = repo
        .run(&["customer", "new", "globex", "--stack", "data-plane"])
        .code(1);
    assert!(
        existing
            .stderr
            .contains("customer `globex` already has inputs for stack `data-plane`"),
        "{}",
        existing.stderr
    );
    assert_eq!(read(&repo, "customers/globex/data-plane.tfvars"), before);

    // The same customer may start inputs for another stack.
    repo.run(&["customer", "new", "globex", "--stack", "control-plane"])
        .ok();
    assert!(repo
        .dir
        .join("customers/globex/control-plane.tfvars")
        .is_file());
}

#[test]
fn auto_ranges_need_a_pool() {
    let repo = TestRepo::new();
    let config = read(&repo, "stackpack.toml");
    let at = config.find("\n[customers]").unwrap();
    repo.write("stackpack.toml", &config[..at]);
    refused(
        &repo,
        &["hooli", "--stack", "data-plane", "--cidr", "auto"],
        2,
        &["`--cidr auto` needs a pool", "cidr-pool = \"10.0.0.0/8\""],
        "hooli",
    );
}

#[test]
fn a_range_typed_for_a_new_customer_is_refused_when_it_overlaps_one_sharing_its_control_plane() {
    let repo = with_pool();
    let args = |region: &'static str| {
        [
            "hooli",
            "--stack",
            "data-plane",
            "--cidr",
            "10.40.128.0/20",
            "--control-plane-region",
            region,
        ]
    };
    refused(
        &repo,
        &args("us-east-1"),
        1,
        &["`10.40.128.0/20` overlaps the range of customer `globex` (`10.40.0.0/16`)"],
        "hooli",
    );
    // `globex` reports to `us-east-1`: in `eu-west-1` the range is free.
    let mut free = vec!["customer", "new"];
    free.extend_from_slice(&args("eu-west-1"));
    repo.run(&free).ok();
}

#[test]
fn a_hand_typed_overlap_is_refused_by_check_naming_both_customers() {
    let repo = TestRepo::new();
    let globex = read(&repo, "customers/globex/data-plane.tfvars");
    let hooli = globex
        .replace("\"globex\"", "\"hooli\"")
        .replace("10.40.0.0/16", "10.40.128.0/20");
    repo.write("customers/hooli/data-plane.tfvars", &hooli);
    let run = repo.run(&["check", "--json"]).code(1);
    let json = run.json();
    assert_eq!(rules_of(&json, "hooli"), ["cidr-overlap"]);
    assert_eq!(rules_of(&json, "globex"), ["cidr-overlap"]);
    assert!(
        run.stderr.contains(
            "`vpc_cidr` `10.40.128.0/20` of customer `hooli` overlaps `10.40.0.0/16` of customer `globex` (`customers/globex/data-plane.tfvars:4`); both report to control-plane region `us-east-1`"
        ),
        "{}",
        run.stderr
    );

    // Reporting to another control plane, the same range is no one else's business.
    repo.write(
        "customers/hooli/data-plane.tfvars",
        &hooli.replace(
            "control_plane_region = \"us-east-1\"",
            "control_plane_region = \"eu-west-1\"",
        ),
    );
    repo.run(&["check"]).ok();
}

#[test]
fn ranges_allocated_for_200_customers_never_overlap_within_a_control_plane() {
    let repo = with_pool();
    let regions = ["us-east-1", "eu-central-1", "ap-southeast-2"];
    for i in 0..200 {
        let id = format!("c{i:03}");
        repo.run(&[
            "customer",
            "new",
            &id,
            "--stack",
            "data-plane",
            "--control-plane-region",
            regions[i % 3],
            "--cidr",
            "auto",
        ])
        .ok();
    }
    let mut ranges: Vec<(String, String, (u32, u32))> = Vec::new();
    for entry in std::fs::read_dir(repo.dir.join("customers")).unwrap() {
        let entry = entry.unwrap();
        let Ok(text) = std::fs::read_to_string(entry.path().join("data-plane.tfvars")) else {
            continue;
        };
        let cidr = value_of(&text, "vpc_cidr").unwrap();
        let region = value_of(&text, "control_plane_region").unwrap();
        ranges.push((
            entry.file_name().to_string_lossy().into(),
            region,
            bounds(&cidr),
        ));
    }
    assert_eq!(ranges.len(), 203);
    for (i, (a, region_a, (first_a, last_a))) in ranges.iter().enumerate() {
        for (b, region_b, (first_b, last_b)) in &ranges[i + 1..] {
            let overlap = first_a <= last_b && first_b <= last_a;
            assert!(
                !(overlap && region_a == region_b),
                "{a} and {b} overlap in {region_a}"
            );
        }
    }
    // Ranges are reused across control planes: 200 customers in 3 regions fit in far
    // fewer than 200 distinct ranges.
    let distinct: std::collections::BTreeSet<(u32, u32)> =
        ranges.iter().map(|(_, _, r)| *r).collect();
    assert!(distinct.len() < 80, "{} distinct ranges", distinct.len());

    let json = repo.run(&["check", "--json"]).code(1).json();
    let overlaps = json["customers"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["findings"].as_array().unwrap().clone())
        .filter(|f| f["rule"] == "cidr-overlap")
        .count();
    assert_eq!(overlaps, 0, "check agrees that no two ranges overlap");
}
