#!/usr/bin/env python3
"""Prints the two lock-file hashes of provider package zips (the registry's format).

    scripts/provider-hash.py ZIP...      one line per zip: `h1:<...>  zh:<...>  ZIP`
    scripts/provider-hash.py --json ZIP  {"h1": ..., "zh": ...} for one zip

`zh:` is the hex SHA-256 of the zip file itself. `h1:` is the hash of its contents, the
one `terraform providers lock -fs-mirror` writes: the SHA-256 over the sorted lines
`<hex sha256 of entry>  <entry name>\\n`, one per file entry, base64-encoded (Go's
golang.org/x/mod/sumdb/dirhash Hash1, as Terraform's getproviders.PackageHashV1 uses).
"""
import base64
import hashlib
import json
import sys
import zipfile


def h1(path):
    lines = []
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            if info.is_dir():
                continue
            digest = hashlib.sha256()
            with archive.open(info) as entry:
                for chunk in iter(lambda: entry.read(1 << 20), b""):
                    digest.update(chunk)
            lines.append(f"{digest.hexdigest()}  {info.filename}\n")
    summary = hashlib.sha256("".join(sorted(lines)).encode()).digest()
    return "h1:" + base64.b64encode(summary).decode()


def zh(path):
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return "zh:" + digest.hexdigest()


def main(args):
    as_json = args[:1] == ["--json"]
    paths = args[1:] if as_json else args
    if not paths or (as_json and len(paths) != 1):
        sys.exit(__doc__.strip())
    if as_json:
        print(json.dumps({"h1": h1(paths[0]), "zh": zh(paths[0])}))
    else:
        for path in paths:
            print(f"{h1(path)}  {zh(path)}  {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
