//! `stackpack-aws`: the AWS client the three programs share.
//!
//! A tour, in the order a request travels:
//!
//! - [`s3::AwsCredentials`] are the keys: the environment's, else the static keys of
//!   the profile `AWS_PROFILE` names, read by [`profile`] from `~/.aws/credentials`
//!   and `~/.aws/config`. The secret is never printed, not even by `Debug`.
//! - [`s3`] is S3: [`s3::S3Client`] checks (and, when asked, creates) the runner's
//!   state bucket; [`s3::S3Objects`] keeps the registry's blobs (streamed GETs,
//!   multipart uploads). Every request is signed with Signature Version 4 by
//!   `aws-sigv4` (`s3::sign_v4`), path-style against an endpoint (moto, MinIO),
//!   virtual-hosted against AWS.
//! - [`api`] calls any other AWS API the same way: EC2's Query protocol, its answers
//!   read into [`ec2`]'s typed structs, and JSON 1.1 (Service Quotas, KMS).
//! - [`kms`] signs with a key held in AWS KMS (`awskms:///alias/…`), checked first,
//!   every answer verified.
//! - [`xml`] reads AWS's XML answers into typed structs (`quick-xml` and serde), and
//!   every error shape's code.
//! - [`http`] is what they share: rustls with `ring`, one small blocking runtime per
//!   client, SigV4's percent-encoding.
//!
//! This crate depends on `stackpack-schema` (digests and signatures, for [`kms`]) and
//! on nothing else of the workspace: `bundle`, the programs and the registry use it,
//! never the other way.

pub mod api;
pub mod ec2;
pub mod http;
pub mod kms;
pub mod profile;
pub mod s3;
pub mod xml;
