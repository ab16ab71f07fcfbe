#!/usr/bin/env python3
"""Writes the CycloneDX 1.6 SBOM of the crates linked into one program.

Usage: sbom.py PACKAGE TARGET_TRIPLE > program.cdx.json

Reads `cargo metadata` (the resolved graph for the target platform, from
Cargo.lock: `--locked`, nothing fetched that the lock does not name) and walks the
program's normal dependencies: what the binary links, not what only builds it.
Each crate is a component with its purl, its crates.io SHA-256 (Cargo.lock's
checksum) and its licence expression. Nothing in it comes from the clock: the
timestamp is the commit's (SOURCE_DATE_EPOCH) and the serial number is derived
from the content, so two runs on one commit write the same bytes.
"""
import datetime
import hashlib
import json
import os
import subprocess
import sys
import uuid


def cargo_metadata(triple):
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--locked",
         "--filter-platform", triple],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out)


def licence_expression(text):
    # Old crates write `MIT/Apache-2.0`; SPDX expressions say `MIT OR Apache-2.0`.
    if not text:
        return None
    return " OR ".join(part.strip() for part in text.split("/")) if "/" in text else text


def purl(pkg):
    return f"pkg:cargo/{pkg['name']}@{pkg['version']}"


def is_proc_macro(pkg):
    # Compiled for the build machine and run by the compiler: not in the binary.
    return any("proc-macro" in t["kind"] for t in pkg["targets"])


def linked_packages(meta, root_name):
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    packages = {p["id"]: p for p in meta["packages"]}
    root = next(p["id"] for p in meta["packages"]
                if p["name"] == root_name and p["source"] is None)
    seen, stack, edges = set(), [root], {}
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        deps = []
        for dep in nodes[pid]["deps"]:
            # Normal dependencies only: build scripts and proc-macros run at build time.
            if any(k["kind"] is None for k in dep["dep_kinds"]) and not is_proc_macro(packages[dep["pkg"]]):
                deps.append(dep["pkg"])
                stack.append(dep["pkg"])
        edges[pid] = sorted(set(deps))
    return root, packages, seen, edges


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: sbom.py PACKAGE TARGET_TRIPLE")
    root_name, triple = sys.argv[1], sys.argv[2]
    meta = cargo_metadata(triple)
    root, packages, ids, edges = linked_packages(meta, root_name)
    checksums = lock_checksums(meta["workspace_root"])
    components = []
    for pid in sorted(ids - {root}, key=lambda i: (packages[i]["name"], packages[i]["version"])):
        pkg = packages[pid]
        component = {
            "type": "library",
            "bom-ref": purl(pkg),
            "name": pkg["name"],
            "version": pkg["version"],
            "purl": purl(pkg),
        }
        checksum = checksums.get((pkg["name"], pkg["version"]))
        if checksum:
            component["hashes"] = [{"alg": "SHA-256", "content": checksum}]
        expression = licence_expression(pkg.get("license"))
        if expression:
            component["licenses"] = [{"expression": expression}]
        if pkg["source"] is None:
            component["description"] = "part of Stackpack's own workspace"
        components.append(component)
    dependencies = [
        {"ref": purl(packages[pid]), "dependsOn": sorted(purl(packages[d]) for d in edges[pid])}
        for pid in sorted(ids, key=lambda i: purl(packages[i]))
    ]
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "0"))
    stamp = datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    top = packages[root]
    bom = {
        "bomFormat": "CycloneDX",
        "specVersion": "1.6",
        "version": 1,
        "metadata": {
            "timestamp": stamp,
            "component": {
                "type": "application",
                "bom-ref": purl(top),
                "name": top["name"],
                "version": top["version"],
                "purl": purl(top),
                "licenses": [{"expression": licence_expression(top.get("license")) or "Apache-2.0"}],
            },
            "properties": [{"name": "stackpack:target", "value": triple}],
        },
        "components": components,
        "dependencies": dependencies,
    }
    body = json.dumps(bom, sort_keys=True).encode()
    bom["serialNumber"] = uuid.UUID(bytes=hashlib.sha256(body).digest()[:16], version=5).urn
    json.dump(bom, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


def lock_checksums(workspace_root):
    # Cargo.lock is TOML; Python 3.11 reads it with tomllib.
    import tomllib
    with open(os.path.join(workspace_root, "Cargo.lock"), "rb") as f:
        lock = tomllib.load(f)
    return {(p["name"], p["version"]): p["checksum"] for p in lock.get("package", []) if "checksum" in p}


if __name__ == "__main__":
    main()
