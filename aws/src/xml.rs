//! AWS's XML answers read into typed structs (`quick-xml` with serde), and the one
//! document this client sends (S3's `CompleteMultipartUpload`) written from one,
//! escaped by the serializer: S3's documents and the error every XML API answers with (`<Error><Code>…`, EC2's
//! `<Response><Errors><Error><Code>…`, the Query APIs' `<ErrorResponse><Error>…`).
//! Fields this project does not read are skipped; every field is optional, so an
//! answer that leaves one out reads as "not set".

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The body of S3's `CompleteMultipartUpload`: each part's number (from 1, in
/// order) and the `ETag` its upload answered.
pub fn complete_multipart(xmlns: &str, etags: &[String]) -> String {
    #[derive(Serialize)]
    #[serde(rename = "CompleteMultipartUpload")]
    struct Complete<'a> {
        #[serde(rename = "@xmlns")]
        xmlns: &'a str,
        #[serde(rename = "Part")]
        parts: Vec<Part<'a>>,
    }
    #[derive(Serialize)]
    struct Part<'a> {
        #[serde(rename = "PartNumber")]
        number: usize,
        #[serde(rename = "ETag")]
        etag: &'a str,
    }
    let parts = etags
        .iter()
        .enumerate()
        .map(|(i, etag)| Part {
            number: i + 1,
            etag,
        })
        .collect();
    quick_xml::se::to_string(&Complete { xmlns, parts })
        .expect("a document of numbers and strings serialises")
}

/// `xml` read as `T`, or `None` when it is not such a document.
pub fn read<T: DeserializeOwned>(xml: &str) -> Option<T> {
    quick_xml::de::from_str(xml).ok()
}

/// The name of the document's root element (`Error` for a refusal).
pub fn root_name(xml: &str) -> Option<String> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(xml);
    loop {
        match reader.read_event().ok()? {
            Event::Start(e) | Event::Empty(e) => {
                return Some(e.local_name().into_inner().to_string())
            }
            Event::Eof => return None,
            _ => {}
        }
    }
}

/// The code of an AWS error answer (`NoSuchBucket`, `AuthFailure`), or empty when
/// the answer holds none (a HEAD's empty body).
pub fn error_code(xml: &str) -> String {
    read::<ErrorAnswer>(xml)
        .and_then(ErrorAnswer::into_code)
        .unwrap_or_default()
}

/// `<Error>` at the root, or wrapped once (`<ErrorResponse><Error>`) or twice
/// (`<Response><Errors><Error>`).
#[derive(Deserialize, Default)]
#[serde(default)]
struct ErrorAnswer {
    #[serde(rename = "Code")]
    code: Option<String>,
    #[serde(rename = "Error")]
    error: Vec<ErrorAnswer>,
    #[serde(rename = "Errors")]
    errors: Option<Box<ErrorAnswer>>,
}

impl ErrorAnswer {
    fn into_code(self) -> Option<String> {
        if let Some(code) = self.code {
            return Some(code);
        }
        if let Some(code) = self.error.into_iter().find_map(ErrorAnswer::into_code) {
            return Some(code);
        }
        self.errors.and_then(|errors| errors.into_code())
    }
}

/// `GetBucketVersioning`'s `<VersioningConfiguration>`.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct Versioning {
    #[serde(rename = "Status")]
    pub status: Option<String>,
}

/// `GetBucketEncryption`'s `<ServerSideEncryptionConfiguration>`.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct Encryption {
    #[serde(rename = "Rule")]
    rules: Vec<EncryptionRule>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct EncryptionRule {
    #[serde(rename = "ApplyServerSideEncryptionByDefault")]
    by_default: Option<EncryptionByDefault>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct EncryptionByDefault {
    #[serde(rename = "SSEAlgorithm")]
    algorithm: Option<String>,
}

impl Encryption {
    /// True when a rule names a default algorithm (`AES256`, `aws:kms`).
    pub fn has_default_algorithm(&self) -> bool {
        self.rules.iter().any(|rule| {
            rule.by_default
                .as_ref()
                .is_some_and(|d| d.algorithm.is_some())
        })
    }
}

/// `GetPublicAccessBlock`'s `<PublicAccessBlockConfiguration>`.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct PublicAccessBlock {
    block_public_acls: Option<String>,
    ignore_public_acls: Option<String>,
    block_public_policy: Option<String>,
    restrict_public_buckets: Option<String>,
}

impl PublicAccessBlock {
    /// True when all four settings are on.
    pub fn blocks_all(&self) -> bool {
        [
            &self.block_public_acls,
            &self.ignore_public_acls,
            &self.block_public_policy,
            &self.restrict_public_buckets,
        ]
        .iter()
        .all(|flag| flag.as_deref() == Some("true"))
    }
}

/// `ListObjectsV2`'s `<ListBucketResult>`.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct Listing {
    pub contents: Vec<ListedObject>,
    pub is_truncated: Option<String>,
    pub next_continuation_token: Option<String>,
}

/// One `<Contents>` of a listing.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct ListedObject {
    pub key: Option<String>,
    pub size: Option<String>,
    pub last_modified: Option<String>,
}

/// `CreateMultipartUpload`'s `<InitiateMultipartUploadResult>`.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
pub struct MultipartUpload {
    pub upload_id: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_are_read_from_every_error_shape() {
        assert_eq!(
            error_code("<?xml version=\"1.0\"?><Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message></Error>"),
            "NoSuchBucket"
        );
        assert_eq!(
            error_code("<Response><Errors><Error><Code>AuthFailure</Code><Message>no</Message></Error></Errors><RequestID>1</RequestID></Response>"),
            "AuthFailure"
        );
        assert_eq!(
            error_code("<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><Error><Type>Sender</Type><Code>InvalidClientTokenId</Code></Error></ErrorResponse>"),
            "InvalidClientTokenId"
        );
        assert_eq!(error_code(""), "");
        assert_eq!(
            root_name("<?xml version=\"1.0\"?>\n<Error/>").as_deref(),
            Some("Error")
        );
    }

    #[test]
    fn listings_read_keys_unescaped_and_the_next_page() {
        let xml = "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>b</Name><IsTruncated>true</IsTruncated><Contents><Key>a&amp;b</Key><Size>3</Size><LastModified>2026-12-01T00:00:00.000Z</LastModified></Contents><CommonPrefixes><Prefix>x/</Prefix></CommonPrefixes><Contents><Key>c</Key><Size>4</Size></Contents><NextContinuationToken>t&lt;1</NextContinuationToken></ListBucketResult>";
        let listing = read::<Listing>(xml).unwrap();
        let keys: Vec<_> = listing
            .contents
            .iter()
            .filter_map(|c| c.key.as_deref())
            .collect();
        assert_eq!(keys, ["a&b", "c"]);
        assert_eq!(listing.is_truncated.as_deref(), Some("true"));
        assert_eq!(listing.next_continuation_token.as_deref(), Some("t<1"));
    }

    #[test]
    fn bucket_settings_read_as_set_or_not() {
        let block = "<PublicAccessBlockConfiguration><BlockPublicAcls>true</BlockPublicAcls><IgnorePublicAcls>true</IgnorePublicAcls><BlockPublicPolicy>true</BlockPublicPolicy><RestrictPublicBuckets>false</RestrictPublicBuckets></PublicAccessBlockConfiguration>";
        assert!(!read::<PublicAccessBlock>(block).unwrap().blocks_all());
        let encryption = "<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault><BucketKeyEnabled>false</BucketKeyEnabled></Rule></ServerSideEncryptionConfiguration>";
        assert!(read::<Encryption>(encryption)
            .unwrap()
            .has_default_algorithm());
        let versioning =
            "<VersioningConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"/>";
        assert_eq!(read::<Versioning>(versioning).unwrap().status, None);
    }

    #[test]
    fn a_complete_multipart_body_numbers_its_parts_and_escapes_their_etags() {
        let etags = ["\"a&b\"".to_string(), "<c>".to_string()];
        let body = super::complete_multipart("http://s3.amazonaws.com/doc/2006-03-01/", &etags);
        assert!(body.starts_with(
            "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Part><PartNumber>1</PartNumber>"
        ), "{body}");
        assert!(!body.contains("a&b") && !body.contains("<c>"), "{body}");
        #[derive(Deserialize)]
        struct Back {
            #[serde(rename = "Part")]
            parts: Vec<BackPart>,
        }
        #[derive(Deserialize)]
        struct BackPart {
            #[serde(rename = "PartNumber")]
            number: usize,
            #[serde(rename = "ETag")]
            etag: String,
        }
        let back = read::<Back>(&body).unwrap();
        let parts: Vec<_> = back
            .parts
            .iter()
            .map(|p| (p.number, p.etag.as_str()))
            .collect();
        assert_eq!(parts, [(1, "\"a&b\""), (2, "<c>")]);
    }
}
