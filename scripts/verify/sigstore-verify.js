#!/usr/bin/env node
// Verifies a Stackpack Sigstore bundle (v0.3, DSSE content, a `publicKey` hint)
// with Sigstore's own JavaScript verifier, `@sigstore/verify`, against the vendor's
// public key. Usage: node sigstore-verify.js BUNDLE.json VENDOR.pub [SUBJECT_SHA256]
//
// Stackpack's bundles carry no transparency-log entry and no timestamp (the vendor's
// key is the trust root and bundles must verify offline), so the verifier is told
// to expect none: thresholds of zero for tlog, CT log and timestamps. Everything
// else is the library's own check: the bundle's shape, the key the hint names, and
// the DSSE signature over the statement. Prints the statement on success.
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const { Verifier, toSignedEntity, toTrustMaterial } = require('@sigstore/verify');
const { bundleFromJSON } = require('@sigstore/bundle');

const [bundlePath, keyPath, subject] = process.argv.slice(2);
if (!bundlePath || !keyPath) {
  console.error('usage: node sigstore-verify.js BUNDLE.json VENDOR.pub [SUBJECT_SHA256]');
  process.exit(2);
}
const der = crypto.createPublicKey(fs.readFileSync(keyPath)).export({ type: 'spki', format: 'der' });
// The key id Stackpack writes as the hint: the first 16 hex of SHA-256(SPKI DER).
const keyId = crypto.createHash('sha256').update(der).digest('hex').slice(0, 16);
const bundle = bundleFromJSON(JSON.parse(fs.readFileSync(bundlePath, 'utf8')));
const trust = toTrustMaterial(
  { certificateAuthorities: [], timestampAuthorities: [], tlogs: [], ctlogs: [] },
  { [keyId]: { rawBytes: der } },
);
const verifier = new Verifier(trust, { tlogThreshold: 0, ctlogThreshold: 0, timestampThreshold: 0 });
try {
  verifier.verify(toSignedEntity(bundle));
} catch (e) {
  console.error(`not verified: ${e.code || ''} ${e.message}`);
  process.exit(1);
}
const statement = JSON.parse(Buffer.from(bundle.content.dsseEnvelope.payload).toString('utf8'));
if (subject && !statement.subject.some((s) => s.digest.sha256 === subject)) {
  console.error(`not verified: the statement is not about sha256:${subject}`);
  process.exit(1);
}
console.log(JSON.stringify({ verified: true, keyId, predicateType: statement.predicateType }));
