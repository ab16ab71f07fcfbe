#!/usr/bin/env python3
"""Finds and verifies a Stackpack bundle's or release's attestations in any OCI
registry with tools Stackpack did not write: how a customer's security team can check
them, and how the tests do.

    python3 attestations.py --registry http://127.0.0.1:5000 \\
        --repository acme/stacks/network --reference 0.1.0 --key vendor.pub

1. Reads the manifest, then its referrers: the OCI 1.1 referrers API, or, on a
   registry without one (CNCF Distribution 2.8), the `sha256-<hex>` tag fallback.
2. Each Sigstore bundle: `@sigstore/verify` (through sigstore-verify.js); its DSSE
   envelope again with `securesystemslib` against the same key; its statement's shape
   with `in-toto-attestation`, and a SLSA provenance's predicate against the SLSA v1
   protobuf schema.
3. The SBOM: CycloneDX 1.6, with `cyclonedx-python-lib`'s strict JSON validator; its
   digest must be the one the signed provenance names.

Prints one JSON object; exits 1 naming what failed. Network reads are capped.
"""
import argparse
import base64
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

MANIFEST_TYPES = "application/vnd.oci.image.manifest.v1+json,application/vnd.oci.image.index.v1+json"
SIGSTORE = "application/vnd.dev.sigstore.bundle.v0.3+json"
CYCLONEDX = "application/vnd.cyclonedx+json"
PROVENANCE = "https://slsa.dev/provenance/v1"
CAP = 32 * 1024 * 1024
HERE = os.path.dirname(os.path.abspath(__file__))


def fail(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(1)


class Registry:
    def __init__(self, url, token):
        self.url = url.rstrip("/")
        self.token = token

    def get(self, path, accept=None):
        request = urllib.request.Request(self.url + path)
        if accept:
            request.add_header("Accept", accept)
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                body = response.read(CAP + 1)
                if len(body) > CAP:
                    fail(f"`{path}` is larger than {CAP} bytes")
                return response.status, body
        except urllib.error.HTTPError as e:
            return e.code, b""

    def manifest(self, repository, reference):
        status, body = self.get(f"/v2/{repository}/manifests/{reference}", MANIFEST_TYPES)
        if status != 200:
            fail(f"`{repository}:{reference}` answered HTTP {status}")
        return body

    def blob(self, repository, digest):
        status, body = self.get(f"/v2/{repository}/blobs/{digest}")
        if status != 200:
            fail(f"blob `{digest}` answered HTTP {status}")
        if "sha256:" + hashlib.sha256(body).hexdigest() != digest:
            fail(f"blob `{digest}` does not match its digest")
        return body

    def referrers(self, repository, digest):
        status, body = self.get(f"/v2/{repository}/referrers/{digest}", "application/vnd.oci.image.index.v1+json")
        if status == 200:
            return "referrers API", json.loads(body).get("manifests", [])
        status, body = self.get(
            f"/v2/{repository}/manifests/{digest.replace(':', '-')}", "application/vnd.oci.image.index.v1+json"
        )
        if status == 200:
            return "tag fallback", json.loads(body).get("manifests", [])
        return "none", []


def key_id(pem):
    der = subprocess.run(
        ["openssl", "pkey", "-pubin", "-outform", "DER"], input=pem, capture_output=True, check=True
    ).stdout
    return hashlib.sha256(der).hexdigest()[:16]


def dsse_with_securesystemslib(envelope, pem, keyid):
    from cryptography.hazmat.primitives.serialization import load_pem_public_key
    from securesystemslib.dsse import Envelope
    from securesystemslib.signer import SSlibKey

    public = load_pem_public_key(pem)
    key = SSlibKey.from_crypto(public, keyid=keyid)
    verified = Envelope.from_dict(envelope).verify([key], 1)
    if keyid not in verified:
        fail("securesystemslib did not accept the DSSE envelope")
    return json.loads(base64.b64decode(envelope["payload"]))


def statement_shape(statement):
    from google.protobuf import json_format
    from in_toto_attestation.predicates.provenance.v1 import provenance_pb2
    from in_toto_attestation.v1.statement import Statement
    from in_toto_attestation.v1.resource_descriptor import ResourceDescriptor

    subjects = []
    for s in statement["subject"]:
        subjects.append(ResourceDescriptor(name=s["name"], digest=s["digest"]).pb)
    Statement(subjects, statement["predicateType"], statement["predicate"]).validate()
    if statement["predicateType"] == PROVENANCE:
        json_format.ParseDict(statement["predicate"], provenance_pb2.Provenance())


def cyclonedx_valid(body):
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    error = JsonStrictValidator(SchemaVersion.V1_6).validate_str(body.decode())
    if error:
        fail(f"the SBOM is not valid CycloneDX 1.6: {error}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--registry", required=True, help="http(s)://host:port")
    parser.add_argument("--repository", required=True, help="acme/stacks/network")
    parser.add_argument("--reference", required=True, help="a tag or sha256:<hex>")
    parser.add_argument("--key", required=True, help="the vendor's public key (SPKI PEM)")
    parser.add_argument("--token", default=os.environ.get("REGISTRY_TOKEN"), help="a bearer token")
    parser.add_argument("--text", action="store_true", help="sentences for people instead of one JSON object")
    args = parser.parse_args()

    registry = Registry(args.registry, args.token)
    pem = open(args.key, "rb").read()
    keyid = key_id(pem)
    manifest = registry.manifest(args.repository, args.reference)
    subject = "sha256:" + hashlib.sha256(manifest).hexdigest()
    found_by, referrers = registry.referrers(args.repository, subject)
    report = {"subject": subject, "foundBy": found_by, "sigstore": [], "sbom": None}
    sbom_digest, provenance = None, None
    for referrer in referrers:
        kind = referrer.get("artifactType")
        if kind not in (SIGSTORE, CYCLONEDX):
            continue
        body = registry.manifest(args.repository, referrer["digest"])
        inner = json.loads(body)
        if inner.get("subject", {}).get("digest") != subject:
            fail(f"referrer `{referrer['digest']}` names another subject")
        layer = inner["layers"][0]["digest"]
        content = registry.blob(args.repository, layer)
        if kind == CYCLONEDX:
            cyclonedx_valid(content)
            sbom_digest = layer
            continue
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            f.write(content)
            f.flush()
            run = subprocess.run(
                ["node", os.path.join(HERE, "sigstore-verify.js"), f.name, args.key, subject.split(":")[1]],
                capture_output=True,
                text=True,
            )
        if run.returncode != 0:
            fail(f"@sigstore/verify refused `{referrer['digest']}`: {run.stderr.strip()}")
        statement = dsse_with_securesystemslib(json.loads(content)["dsseEnvelope"], pem, keyid)
        statement_shape(statement)
        if statement["predicateType"] == PROVENANCE:
            provenance = statement["predicate"]
        report["sigstore"].append(statement["predicateType"])
    if provenance is None:
        fail(f"no signed SLSA provenance found for `{subject}` ({found_by})")
    named = [b["digest"]["sha256"] for b in provenance["runDetails"].get("byproducts", [])
             if b.get("mediaType") == CYCLONEDX]
    if sbom_digest is None or sbom_digest.split(":")[1] not in named:
        fail(f"the SBOM `{sbom_digest}` is not the one the provenance names ({named})")
    report["sbom"] = sbom_digest
    report["provenance"] = {
        "repository": provenance["buildDefinition"]["externalParameters"]["repository"],
        "ref": provenance["buildDefinition"]["externalParameters"]["ref"],
        "commit": provenance["buildDefinition"]["externalParameters"]["commit"],
        "builder": provenance["runDetails"]["builder"]["id"],
    }
    report["sigstore"].sort()
    if args.text:
        p = report["provenance"]
        print(f"found through the {found_by}: {len(report['sigstore'])} Sigstore bundles and an SBOM about {subject}")
        print(f"@sigstore/verify and securesystemslib: each verifies with key {keyid} ({', '.join(report['sigstore'])})")
        print("in-toto-attestation: each statement, and the SLSA v1 provenance, is well formed")
        print(f"cyclonedx-python-lib: the SBOM {sbom_digest} is valid CycloneDX 1.6, the one the provenance names")
        print(f"provenance: {p['repository']} at {p['commit']} on {p['ref']}, built by {p['builder']}")
    else:
        print(json.dumps(report))


if __name__ == "__main__":
    main()
