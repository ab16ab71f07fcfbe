#!/usr/bin/env python3
"""Writes an OCI image of one Stackpack program into an OCI image layout.

Usage:
  image.py --layout DIR --program stackpack-runner --binary PATH --version V
           --commit SHA --source URL [--sbom FILE] [--license FILE]

Two layers: a small runtime (the C library the binary links, found with `ldd`, CA
certificates, a non-root user `stackpack` 65532:65532, /etc/hosts, /tmp), then the
program (in /usr/local/bin, with its licence and SBOM under /usr/share/doc). The
config sets the user, the entrypoint, `SSL_CERT_FILE` and the
`org.opencontainers.image.*` labels; the registry's image also declares port 5000
and a default `serve` command on a volume.

Reproducible: every file's time is the commit's (SOURCE_DATE_EPOCH), owners are
fixed, entries are sorted, gzip stores no name or time, and JSON is written with
sorted keys, so two runs on one commit give the same manifest digest.
"""
import argparse
import datetime
import gzip
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile

UID = GID = 65532
MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"


def epoch():
    return int(os.environ.get("SOURCE_DATE_EPOCH", "0"))


class Layer:
    """A tar built in memory, entries sorted, every header fixed."""

    def __init__(self):
        self.entries = {}

    def dir(self, path, mode=0o755, uid=0, gid=0):
        self.entries[path] = ("dir", None, mode, uid, gid)

    def file(self, path, data, mode=0o644, uid=0, gid=0):
        parent = os.path.dirname(path)
        while parent and parent not in self.entries:
            self.dir(parent)
            parent = os.path.dirname(parent)
        self.entries[path] = ("file", data, mode, uid, gid)

    def link(self, path, target):
        self.entries[path] = ("symlink", target, 0o777, 0, 0)

    def tar(self):
        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for path in sorted(self.entries):
                kind, data, mode, uid, gid = self.entries[path]
                info = tarfile.TarInfo(path)
                info.mtime, info.mode, info.uid, info.gid = epoch(), mode, uid, gid
                info.uname = info.gname = ""
                if kind == "dir":
                    info.type = tarfile.DIRTYPE
                    tar.addfile(info)
                elif kind == "symlink":
                    info.type = tarfile.SYMTYPE
                    info.linkname = data
                    tar.addfile(info)
                else:
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
        return raw.getvalue()


def gz(data):
    out = io.BytesIO()
    with gzip.GzipFile(filename="", fileobj=out, mode="wb", mtime=0, compresslevel=6) as f:
        f.write(data)
    return out.getvalue()


def runtime_layer(binary, registry):
    layer = Layer()
    for d in ["etc", "etc/ssl", "etc/ssl/certs", "usr", "usr/local", "usr/local/bin", "lib64"]:
        layer.dir(d)
    layer.dir("tmp", mode=0o1777)
    # Where a container runtime mounts its own: programs (an engine packed with UPX
    # among them) read /proc/self.
    for mountpoint in ["proc", "dev", "sys"]:
        layer.dir(mountpoint, mode=0o555)
    layer.dir("home/stackpack", mode=0o700, uid=UID, gid=GID)
    if registry:
        layer.dir("var/lib/stackpack", mode=0o700, uid=UID, gid=GID)
    layer.file("etc/passwd", b"root:x:0:0:root:/root:/sbin/nologin\nstackpack:x:65532:65532:stackpack:/home/stackpack:/sbin/nologin\n")
    layer.file("etc/group", b"root:x:0:\nstackpack:x:65532:\n")
    layer.file("etc/hosts", b"127.0.0.1 localhost\n::1 localhost\n")
    layer.file("etc/nsswitch.conf", b"hosts: files dns\n")
    with open("/etc/ssl/certs/ca-certificates.crt", "rb") as f:
        layer.file("etc/ssl/certs/ca-certificates.crt", f.read())
    # The C library the binary links (glibc 2.17 symbols at the most for a dist
    # build), taken from the build machine with the loader at its standard path.
    out = subprocess.run(["ldd", binary], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        match = re.search(r"(/\S+) \(0x", line)
        if not match:
            continue
        path = os.path.realpath(match.group(1))
        name = os.path.basename(match.group(1))
        with open(path, "rb") as f:
            data = f.read()
        if "ld-linux" in name:
            layer.file(f"lib64/{name}", data, mode=0o755)
        else:
            layer.file(f"lib/x86_64-linux-gnu/{name}", data, mode=0o755)
    return layer


def program_layer(args):
    layer = Layer()
    with open(args.binary, "rb") as f:
        layer.file(f"usr/local/bin/{args.program}", f.read(), mode=0o755)
    for extra in [args.license, args.sbom]:
        if extra:
            with open(extra, "rb") as f:
                layer.file(f"usr/share/doc/stackpack/{os.path.basename(extra)}", f.read())
    return layer


def put_blob(layout, data):
    digest = hashlib.sha256(data).hexdigest()
    path = os.path.join(layout, "blobs", "sha256", digest)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return {"digest": f"sha256:{digest}", "size": len(data)}


def canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def main():
    p = argparse.ArgumentParser()
    for name in ["layout", "program", "binary", "version", "commit", "source"]:
        p.add_argument(f"--{name}", required=True)
    p.add_argument("--sbom")
    p.add_argument("--license")
    args = p.parse_args()
    registry = args.program == "stackpack-registry"
    created = datetime.datetime.fromtimestamp(epoch(), datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    labels = {
        "org.opencontainers.image.title": args.program,
        "org.opencontainers.image.version": args.version,
        "org.opencontainers.image.revision": args.commit,
        "org.opencontainers.image.source": args.source,
        "org.opencontainers.image.created": created,
        "org.opencontainers.image.licenses": "Apache-2.0",
        "org.opencontainers.image.description": {
            "stackpack-runner": "Stackpack's runner: verifies, plans and applies signed Terraform/OpenTofu bundles in the customer's account",
            "stackpack-registry": "Stackpack's registry: an OCI registry with the ledger of who runs what",
            "stackpack": "Stackpack's packager: versions, builds, signs and publishes Terraform/OpenTofu bundles",
        }[args.program],
    }
    layers, diff_ids = [], []
    for layer in [runtime_layer(args.binary, registry), program_layer(args)]:
        tar = layer.tar()
        diff_ids.append("sha256:" + hashlib.sha256(tar).hexdigest())
        blob = put_blob(args.layout, gz(tar))
        layers.append({"mediaType": MEDIA_LAYER, **blob})
    config = {
        "User": f"{UID}:{GID}",
        "Entrypoint": [f"/usr/local/bin/{args.program}"],
        "Env": [
            "PATH=/usr/local/bin:/usr/bin:/bin",
            "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
            "HOME=/home/stackpack",
        ],
        "WorkingDir": "/home/stackpack",
        "Labels": labels,
    }
    if registry:
        config["Cmd"] = ["serve", "--data", "/var/lib/stackpack", "--listen", "0.0.0.0:5000"]
        config["ExposedPorts"] = {"5000/tcp": {}}
        config["Volumes"] = {"/var/lib/stackpack": {}}
    image_config = {
        "architecture": "amd64",
        "os": "linux",
        "created": created,
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "history": [
            {"created": created, "created_by": "scripts/dist/image.py: runtime (C library, CA certificates, user 65532)"},
            {"created": created, "created_by": f"scripts/dist/image.py: {args.program} {args.version}"},
        ],
    }
    config_blob = put_blob(args.layout, canonical(image_config))
    manifest = {
        "schemaVersion": 2,
        "mediaType": MEDIA_MANIFEST,
        "config": {"mediaType": MEDIA_CONFIG, **config_blob},
        "layers": layers,
        "annotations": labels,
    }
    manifest_blob = put_blob(args.layout, canonical(manifest))
    os.makedirs(args.layout, exist_ok=True)
    with open(os.path.join(args.layout, "oci-layout"), "w") as f:
        f.write('{"imageLayoutVersion":"1.0.0"}')
    index_path = os.path.join(args.layout, "index.json")
    index = {"schemaVersion": 2, "manifests": []}
    if os.path.exists(index_path):
        with open(index_path) as f:
            index = json.load(f)
    ref = f"{args.program}-{args.version}"
    index["manifests"] = [m for m in index["manifests"]
                          if m.get("annotations", {}).get("org.opencontainers.image.ref.name") != ref]
    index["manifests"].append({
        "mediaType": MEDIA_MANIFEST, **manifest_blob,
        "annotations": {"org.opencontainers.image.ref.name": ref},
    })
    index["manifests"].sort(key=lambda m: m["annotations"]["org.opencontainers.image.ref.name"])
    with open(index_path, "wb") as f:
        f.write(canonical(index))
    print(f"{ref} {manifest_blob['digest']}")


if __name__ == "__main__":
    sys.exit(main())
