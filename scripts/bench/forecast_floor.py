#!/usr/bin/env python3
"""The floor a forecast is measured against: one customer's release, by hand.

For each stack of the release in dependency order, in a fresh copy of the vendor
repository: `terraform init` from the provider mirror, `apply` with the customer's
inputs (and the outputs of the stacks it is wired to), then `plan` again: the bare
engine work a forecast of an unchanged release does for one customer, with nothing of
Stackpack's around it. Prints the seconds it took.

    forecast_floor.py REPO RELEASE CUSTOMER TERRAFORM MIRROR ENDPOINT WORK
"""

import json
import os
import shutil
import subprocess
import sys
import time
import tomllib


def order(repo, stacks):
    deps = {}
    for name in stacks:
        with open(os.path.join(repo, "stacks", name, "stack.toml"), "rb") as f:
            toml = tomllib.load(f)
        wired = {w.split(".")[0] for w in toml.get("inputs", {}).get("from", {}).values()}
        deps[name] = (set(toml.get("depends-on", [])) | wired) & set(stacks)
    done = []
    while len(done) < len(stacks):
        ready = sorted(n for n in stacks if n not in done and deps[n] <= set(done))
        done.append(ready[0])
    return done, deps


def main():
    repo, release, customer, terraform, mirror, endpoint, work = sys.argv[1:8]
    with open(os.path.join(repo, "stackpack.toml"), "rb") as f:
        stacks = tomllib.load(f)["releases"][release]["stacks"]
    copy = os.path.join(work, "repo")
    shutil.copytree(repo, copy, ignore=shutil.ignore_patterns(".git", ".stackpack", ".terraform"))
    env = {
        "PATH": os.environ["PATH"],
        "HOME": work,
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_DEFAULT_REGION": "us-east-1",
        "CHECKPOINT_DISABLE": "1",
        "TF_IN_AUTOMATION": "1",
    }
    sequence, _ = order(copy, stacks)
    outputs = {}
    started = time.monotonic()

    def tf(stack_dir, *args):
        subprocess.run([terraform, *args], cwd=stack_dir, env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    for name in sequence:
        stack_dir = os.path.join(copy, "stacks", name)
        with open(os.path.join(stack_dir, "stack.toml"), "rb") as f:
            wires = tomllib.load(f).get("inputs", {}).get("from", {})
        wired = {k: outputs[v.split(".")[0]][v.split(".")[1]] for k, v in wires.items()}
        with open(os.path.join(stack_dir, "wired.auto.tfvars.json"), "w") as f:
            json.dump(wired, f)
        inputs = os.path.join(copy, "customers", customer, f"{name}.tfvars")
        args = [f"-var-file={inputs}", "-var", f"aws_endpoint={endpoint}"]
        tf(stack_dir, "init", "-input=false", "-no-color", f"-plugin-dir={mirror}")
        tf(stack_dir, "apply", "-auto-approve", "-input=false", "-no-color", *args)
        out = subprocess.run([terraform, "output", "-json"], cwd=stack_dir, env=env,
                             check=True, capture_output=True, text=True).stdout
        outputs[name] = {k: v["value"] for k, v in json.loads(out).items()}
    for name in sequence:
        stack_dir = os.path.join(copy, "stacks", name)
        inputs = os.path.join(copy, "customers", customer, f"{name}.tfvars")
        tf(stack_dir, "plan", "-input=false", "-no-color", f"-var-file={inputs}",
           "-var", f"aws_endpoint={endpoint}")
    print(f"{time.monotonic() - started:.1f}")


if __name__ == "__main__":
    main()
