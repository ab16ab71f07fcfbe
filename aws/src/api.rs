//! Any AWS API the runner reads, signed like the S3 client's requests
//! ([`crate::s3`]'s Signature Version 4, by `aws-sigv4`): the Query protocol (EC2:
//! form-encoded `Action=…` in, XML out, read into [`crate::ec2`]'s types) and JSON 1.1 (Service Quotas and KMS: `X-Amz-Target` in,
//! JSON out). Against AWS each service has its regional host; against an emulator every
//! request goes to its one endpoint, which tells services apart by the signature's
//! scope. Short timeouts: a caller that gets no answer says "not checked".

use std::time::Duration;

use serde::de::DeserializeOwned;

use crate::http::percent_encode;
use crate::s3::{sign_v4, AwsCredentials, SigningInput};
use crate::xml;

/// Why a call gave no answer to use.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("cannot reach `{url}`: {detail}")]
    Unreachable { url: String, detail: String },
    #[error("the credentials (access key `{key_id}`) were refused by `{service}`: {code}")]
    Denied {
        service: String,
        key_id: String,
        code: String,
    },
    #[error("`{service}` answered `{action}` with HTTP {status} {code}")]
    Failed {
        service: String,
        action: String,
        status: u16,
        code: String,
    },
    #[error("`{service}` answered `{action}` with something unreadable: {detail}")]
    Unreadable {
        service: String,
        action: String,
        detail: String,
    },
}

/// One region (and endpoint) and one set of credentials.
pub struct AwsApi {
    endpoint: Option<String>,
    region: String,
    credentials: AwsCredentials,
    http: reqwest::Client,
    runtime: tokio::runtime::Runtime,
}

impl AwsApi {
    /// `endpoint`: an emulator's URL for every service; `None` for AWS itself.
    pub fn new(
        endpoint: Option<&str>,
        region: &str,
        credentials: AwsCredentials,
        timeout: Duration,
    ) -> Result<AwsApi, ApiError> {
        let (http, runtime) = crate::http::http_parts(timeout.min(Duration::from_secs(5)), timeout)
            .map_err(|detail| ApiError::Unreachable {
                url: endpoint.unwrap_or("AWS").to_string(),
                detail,
            })?;
        Ok(AwsApi {
            endpoint: endpoint.map(|e| e.trim_end_matches('/').to_string()),
            region: region.to_string(),
            credentials,
            http,
            runtime,
        })
    }

    pub fn region(&self) -> &str {
        &self.region
    }

    /// Scheme and host for `host_prefix` (`ec2`, `servicequotas`).
    fn host(&self, host_prefix: &str) -> (String, String) {
        match &self.endpoint {
            Some(endpoint) => {
                let (scheme, rest) = endpoint.split_once("://").unwrap_or(("https", endpoint));
                (
                    scheme.to_string(),
                    rest.split('/').next().unwrap_or(rest).to_string(),
                )
            }
            None => (
                "https".into(),
                format!("{host_prefix}.{}.amazonaws.com", self.region),
            ),
        }
    }

    /// One signed POST to `/`; returns status and body.
    fn post(
        &self,
        service: &str,
        host_prefix: &str,
        extra_headers: &[(&'static str, String)],
        body: &str,
    ) -> Result<(u16, String), ApiError> {
        let (scheme, host) = self.host(host_prefix);
        let url = format!("{scheme}://{host}/");
        let signed = sign_v4(&SigningInput {
            service,
            extra_headers,
            method: "POST",
            url: &url,
            body: body.as_bytes(),
            region: &self.region,
            credentials: &self.credentials,
            now: std::time::SystemTime::now(),
        })
        .map_err(|detail| ApiError::Unreachable {
            url: url.clone(),
            detail,
        })?;
        let mut request = self.http.post(&url).body(body.to_string());
        for (name, value) in signed {
            request = request.header(name, value);
        }
        self.runtime.block_on(async {
            let answer = request.send().await.map_err(|e| ApiError::Unreachable {
                url: url.clone(),
                detail: crate::http::error_chain(&e),
            })?;
            let status = answer.status().as_u16();
            let body = crate::http::answer_text(answer).await;
            Ok((status, body))
        })
    }

    fn refusal(&self, service: &str, action: &str, status: u16, code: String) -> ApiError {
        let denied = status == 403
            || matches!(
                code.as_str(),
                "AuthFailure"
                    | "UnauthorizedOperation"
                    | "AccessDenied"
                    | "AccessDeniedException"
                    | "InvalidClientTokenId"
                    | "SignatureDoesNotMatch"
                    | "ExpiredToken"
                    | "UnrecognizedClientException"
            );
        if denied {
            ApiError::Denied {
                service: service.into(),
                key_id: self.credentials.key_id_shown(),
                code,
            }
        } else {
            ApiError::Failed {
                service: service.into(),
                action: action.into(),
                status,
                code,
            }
        }
    }

    /// An EC2 Query call: `Action` with `params`, every page (`NextToken`) read as
    /// `T` (one of [`crate::ec2`]'s answers).
    pub fn ec2<T: DeserializeOwned>(
        &self,
        action: &str,
        params: &[(&str, &str)],
    ) -> Result<Vec<T>, ApiError> {
        self.ec2_pages(action, params)?
            .iter()
            .map(|page| {
                quick_xml::de::from_str(page).map_err(|e| ApiError::Unreadable {
                    service: "ec2".into(),
                    action: action.into(),
                    detail: e.to_string(),
                })
            })
            .collect()
    }

    /// The XML answers of every page of an EC2 call.
    fn ec2_pages(&self, action: &str, params: &[(&str, &str)]) -> Result<Vec<String>, ApiError> {
        let mut pages = Vec::new();
        let mut next: Option<String> = None;
        loop {
            let mut body = format!("Action={action}&Version=2016-11-15");
            for (name, value) in params {
                body.push_str(&format!(
                    "&{}={}",
                    percent_encode(name),
                    percent_encode(value)
                ));
            }
            if let Some(token) = &next {
                body.push_str(&format!("&NextToken={}", percent_encode(token)));
            }
            let headers = [(
                "content-type",
                "application/x-www-form-urlencoded; charset=utf-8".to_string(),
            )];
            let (status, text) = self.post("ec2", "ec2", &headers, &body)?;
            if status != 200 {
                let code = xml::error_code(&text);
                return Err(self.refusal("ec2", action, status, code));
            }
            next = xml::read::<crate::ec2::NextToken>(&text)
                .and_then(|page| page.next_token)
                .filter(|t| !t.is_empty());
            pages.push(text);
            if next.is_none() || pages.len() >= 50 {
                return Ok(pages);
            }
        }
    }

    /// A Service Quotas call (JSON 1.1): `ServiceQuotasV20190624.<action>`.
    pub fn service_quotas(
        &self,
        action: &str,
        request: &serde_json::Value,
    ) -> Result<serde_json::Value, ApiError> {
        self.json_call("servicequotas", "ServiceQuotasV20190624", action, request)
    }

    /// A KMS call (JSON 1.1): `TrentService.<action>`.
    pub fn kms(
        &self,
        action: &str,
        request: &serde_json::Value,
    ) -> Result<serde_json::Value, ApiError> {
        self.json_call("kms", "TrentService", action, request)
    }

    /// A JSON 1.1 call: `X-Amz-Target: <target>.<action>`, JSON in and out.
    fn json_call(
        &self,
        service: &str,
        target: &str,
        action: &str,
        request: &serde_json::Value,
    ) -> Result<serde_json::Value, ApiError> {
        let headers = [
            ("content-type", "application/x-amz-json-1.1".to_string()),
            ("x-amz-target", format!("{target}.{action}")),
        ];
        let (status, text) = self.post(service, service, &headers, &request.to_string())?;
        let unreadable = |detail: String| ApiError::Unreadable {
            service: service.into(),
            action: action.into(),
            detail,
        };
        if status != 200 {
            let code = serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .and_then(|v| v["__type"].as_str().map(str::to_string))
                .map(|t| t.rsplit('#').next().unwrap_or(&t).to_string())
                .unwrap_or_default();
            return Err(self.refusal(service, action, status, code));
        }
        serde_json::from_str(&text).map_err(|e| unreadable(e.to_string()))
    }
}
