//! Measures `stackpack check` on a generated repository of 200 modules and 20 stacks,
//! beside `terraform fmt -check -recursive` on the same tree (a rough floor for reading
//! every file once). Measured, never asserted.
//!
//! ```sh
//! cargo run --release -p stackpack-packager --example check_bench [-- MODULES STACKS]
//! ```
//!
//! The generated repository has two commits: the second changes a default in every
//! tenth module and adds an input to every stack. `check` then does what the command
//! does: find the changed stacks and modules, unpack the old commit once, compare every
//! one, and lint the whole repository.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use stackpack_interface::extract_module;
use stackpack_packager::check::{self, lint_with, Cache, LintOptions, RuleConfig, Unit, UnitKind};

fn module_files(i: usize, default_size: usize) -> Vec<(&'static str, String)> {
    let mut variables = String::new();
    for v in 0..12 {
        write!(
            variables,
            r#"variable "setting_{v}" {{
  description = "Setting {v} of module {i}."
  type        = string
  default     = "value-{v}"

  validation {{
    condition     = can(regex("^[a-z0-9-]+$", var.setting_{v}))
    error_message = "Lowercase letters, digits and dashes."
  }}
}}

"#
        )
        .unwrap();
    }
    write!(
        variables,
        r#"variable "size" {{
  description = "How many."
  type        = number
  default     = {default_size}
}}

variable "pools" {{
  description = "Node pools."
  type = map(object({{
    instance_types = optional(list(string), ["m6i.large"])
    min_size       = optional(number, 1)
    max_size       = optional(number, 3)
    labels         = optional(map(string), {{}})
    taints = optional(list(object({{
      key    = string
      value  = optional(string)
      effect = string
    }})), [])
  }}))
  default = {{}}

  validation {{
    condition     = alltrue([for k, p in var.pools : p.min_size <= p.max_size])
    error_message = "min_size must not exceed max_size."
  }}
}}

variable "create_dns" {{
  description = "Manage DNS records."
  type        = bool
  default     = false
}}
"#
    )
    .unwrap();
    let main = format!(
        r#"terraform {{
  required_version = ">= 1.5"
  required_providers {{
    aws = {{
      source  = "hashicorp/aws"
      version = ">= 5.0, < 7.0"
    }}
  }}
}}

locals {{
  name  = "m{i}-${{var.setting_0}}"
  zones = [for z in range(var.size) : "zone-${{z}}"]
}}

resource "aws_s3_bucket" "this" {{
  bucket = local.name
  tags   = {{ Module = "m{i}" }}
}}

resource "aws_instance" "node" {{
  count         = var.size
  ami           = "ami-123"
  instance_type = "t3.micro"
}}

resource "aws_route53_record" "this" {{
  for_each = var.create_dns ? toset(local.zones) : toset([])
  name     = each.key
  type     = "A"
  zone_id  = "Z1"
  records  = [aws_instance.node[0].private_ip]
}}

data "aws_caller_identity" "current" {{}}
"#
    );
    let outputs = r#"output "bucket" {
  description = "The bucket."
  value       = aws_s3_bucket.this.id
}

output "nodes" {
  description = "Node ids."
  value       = aws_instance.node[*].id
}
"#
    .to_string();
    vec![
        ("variables.tf", variables),
        ("main.tf", main),
        ("outputs.tf", outputs),
    ]
}

fn stack_files(s: usize, modules: usize, extra_input: bool) -> Vec<(&'static str, String)> {
    let mut main = String::from("terraform {\n  required_version = \">= 1.5\"\n}\n\n");
    for k in 0..10 {
        let m = (s * 10 + k) % modules;
        write!(
            main,
            "module \"m{m}\" {{\n  source    = \"../../modules/m{m}\"\n  setting_0 = var.prefix\n}}\n\n"
        )
        .unwrap();
    }
    let mut variables = String::from(
        "variable \"prefix\" {\n  description = \"Name prefix.\"\n  type        = string\n  default     = \"acme\"\n}\n",
    );
    if extra_input {
        variables.push_str("\nvariable \"owner\" {\n  description = \"Owner tag.\"\n  type        = string\n  default     = \"platform\"\n}\n");
    }
    vec![
        ("main.tf", main),
        ("variables.tf", variables),
        (
            "stack.toml",
            format!("description = \"Stack {s}\"\nengine = \"terraform\"\n"),
        ),
    ]
}

fn write_all(root: &Path, dir: &str, files: &[(&str, String)]) {
    let d = root.join(dir);
    std::fs::create_dir_all(&d).unwrap();
    for (name, text) in files {
        std::fs::write(d.join(name), text).unwrap();
    }
}

fn git(root: &Path, args: &[&str]) {
    let status = Command::new("git")
        .arg("-C")
        .arg(root)
        .args([
            "-c",
            "user.name=Bench",
            "-c",
            "user.email=bench@example.invalid",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .expect("git runs");
    assert!(status.status.success(), "git {args:?}");
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let modules = args.first().copied().unwrap_or(200);
    let stacks = args.get(1).copied().unwrap_or(20);
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();

    std::fs::write(
        root.join("stackpack.toml"),
        "environments = [\"production\", \"staging\"]\n",
    )
    .unwrap();
    for i in 0..modules {
        write_all(root, &format!("modules/m{i}"), &module_files(i, 2));
    }
    for s in 0..stacks {
        write_all(
            root,
            &format!("stacks/s{s}"),
            &stack_files(s, modules, false),
        );
    }
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "initial"]);
    let old = String::from_utf8(
        Command::new("git")
            .arg("-C")
            .arg(root)
            .args(["rev-parse", "HEAD"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .to_string();
    for i in (0..modules).step_by(10) {
        write_all(root, &format!("modules/m{i}"), &module_files(i, 3));
    }
    for s in 0..stacks {
        write_all(
            root,
            &format!("stacks/s{s}"),
            &stack_files(s, modules, true),
        );
    }
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "change"]);
    let tf_files = walk(root).len();

    // Parsing alone.
    let start = Instant::now();
    for i in 0..modules {
        extract_module(&root.join(format!("modules/m{i}"))).unwrap();
    }
    for s in 0..stacks {
        extract_module(&root.join(format!("stacks/s{s}"))).unwrap();
    }
    let parse_time = start.elapsed();

    // The whole check, as the command runs it.
    let start = Instant::now();
    let mut cache = Cache::default();
    let changed = check::changed_files(root, &old).unwrap();
    let mut units = Vec::new();
    for s in 0..stacks {
        let path = format!("stacks/s{s}");
        if check::unit_changed_with(root, &path, &changed, &mut cache).unwrap() {
            units.push(Unit {
                path,
                kind: UnitKind::Stack,
                against: Some(old.clone()),
            });
        }
    }
    for i in 0..modules {
        let path = format!("modules/m{i}");
        if check::unit_changed_with(root, &path, &changed, &mut cache).unwrap() {
            units.push(Unit {
                path,
                kind: UnitKind::Module,
                against: Some(old.clone()),
            });
        }
    }
    let find_time = start.elapsed();
    let reports =
        check::check_units_with(root, &units, None, &RuleConfig::default(), &mut cache).unwrap();
    let compare_time = start.elapsed() - find_time;
    let options = LintOptions::discover(
        root,
        vec!["production".into(), "staging".into()],
        RuleConfig::default(),
    );
    let lints = lint_with(root, &options, &mut cache).unwrap();
    let check_time = start.elapsed();
    let lint_time = check_time - find_time - compare_time;
    let majors = reports
        .iter()
        .filter(|r| r.required == stackpack_schema::version::Bump::Major)
        .count();
    let findings: usize = reports.iter().map(|r| r.findings.len()).sum();

    // Every stack and module compared, changed or not.
    let start = Instant::now();
    let all: Vec<Unit> = (0..stacks)
        .map(|s| (format!("stacks/s{s}"), UnitKind::Stack))
        .chain((0..modules).map(|i| (format!("modules/m{i}"), UnitKind::Module)))
        .map(|(path, kind)| Unit {
            path,
            kind,
            against: Some(old.clone()),
        })
        .collect();
    check::check_units(root, &all, None, &RuleConfig::default()).unwrap();
    let all_time = start.elapsed();

    let start = Instant::now();
    let snapshot = check::Snapshot::at(root, &old).unwrap();
    let unpack_time = start.elapsed();
    drop(snapshot);
    println!(
        "(git archive read into memory alone: {:.1} ms)",
        unpack_time.as_secs_f64() * 1000.0
    );

    let from_env = std::env::var("STACKPACK_TEST_TERRAFORM").ok();
    let terraform = from_env
        .as_deref()
        .into_iter()
        .chain(["/usr/local/bin/terraform", "terraform", "tofu"])
        .find(|t| {
            Command::new(t)
                .arg("version")
                .output()
                .is_ok_and(|o| o.status.success())
        });
    let fmt_time = terraform.map(|t| {
        let start = Instant::now();
        let status = Command::new(t)
            .args(["fmt", "-check", "-recursive"])
            .current_dir(root)
            .output()
            .unwrap();
        (t, start.elapsed(), status.status.code())
    });

    println!("repository: {modules} modules, {stacks} stacks, {tf_files} .tf files");
    println!(
        "changed units: {} ({} need a major release, {findings} interface findings), {} lint findings",
        units.len(),
        majors,
        lints.len()
    );
    println!(
        "parse every module and stack:          {:>8.1} ms",
        parse_time.as_secs_f64() * 1000.0
    );
    println!(
        "stackpack check (changed units + lint): {:>8.1} ms",
        check_time.as_secs_f64() * 1000.0
    );
    println!(
        "  of which: find changed {:.1} ms, read old commit + compare {:.1} ms, lint {:.1} ms",
        find_time.as_secs_f64() * 1000.0,
        compare_time.as_secs_f64() * 1000.0,
        lint_time.as_secs_f64() * 1000.0
    );
    println!(
        "stackpack check (all {} units):        {:>8.1} ms",
        all.len(),
        all_time.as_secs_f64() * 1000.0
    );
    match fmt_time {
        Some((t, d, code)) => println!(
            "{t} fmt -check -recursive:    {:>8.1} ms (exit {})",
            d.as_secs_f64() * 1000.0,
            code.map_or("signal".to_string(), |c| c.to_string())
        ),
        None => println!("terraform fmt: no terraform or tofu binary found"),
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() && !e.file_name().to_string_lossy().starts_with('.') {
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "tf") {
            out.push(p);
        }
    }
    out
}
