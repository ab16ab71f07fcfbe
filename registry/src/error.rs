//! One error type for every request. It becomes the distribution spec's JSON error
//! body (`{"errors":[{"code","message","detail"}]}`) with the spec's status code, on
//! the OCI routes and on the ledger API alike.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// The spec's error codes, plus our own for the ledger.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    BlobUnknown,
    BlobUploadInvalid,
    BlobUploadUnknown,
    DigestInvalid,
    ManifestBlobUnknown,
    ManifestInvalid,
    ManifestUnknown,
    NameInvalid,
    NameUnknown,
    SizeInvalid,
    Unauthorized,
    Denied,
    Unsupported,
    TooManyRequests,
    RangeInvalid,
    /// Ledger: the request body or query is wrong.
    BadRequest,
    /// Ledger: no such customer, release or receipt.
    NotFound,
    /// Ledger: the thing exists already with other content.
    Conflict,
    /// The disk is nearly full: writes wait until space is freed.
    InsufficientStorage,
    /// The database cannot be reached: retry later.
    Unavailable,
    Internal,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::BlobUnknown => "BLOB_UNKNOWN",
            Code::BlobUploadInvalid => "BLOB_UPLOAD_INVALID",
            Code::BlobUploadUnknown => "BLOB_UPLOAD_UNKNOWN",
            Code::DigestInvalid => "DIGEST_INVALID",
            Code::ManifestBlobUnknown => "MANIFEST_BLOB_UNKNOWN",
            Code::ManifestInvalid => "MANIFEST_INVALID",
            Code::ManifestUnknown => "MANIFEST_UNKNOWN",
            Code::NameInvalid => "NAME_INVALID",
            Code::NameUnknown => "NAME_UNKNOWN",
            Code::SizeInvalid => "SIZE_INVALID",
            Code::Unauthorized => "UNAUTHORIZED",
            Code::Denied => "DENIED",
            Code::Unsupported => "UNSUPPORTED",
            Code::TooManyRequests => "TOOMANYREQUESTS",
            Code::RangeInvalid => "RANGE_INVALID",
            Code::BadRequest => "BAD_REQUEST",
            Code::NotFound => "NOT_FOUND",
            Code::Conflict => "CONFLICT",
            Code::InsufficientStorage => "INSUFFICIENT_STORAGE",
            Code::Unavailable => "UNAVAILABLE",
            Code::Internal => "INTERNAL_ERROR",
        }
    }

    pub fn status(self) -> StatusCode {
        match self {
            Code::BlobUnknown
            | Code::BlobUploadUnknown
            | Code::ManifestUnknown
            | Code::NameUnknown
            | Code::NotFound => StatusCode::NOT_FOUND,
            Code::BlobUploadInvalid
            | Code::DigestInvalid
            | Code::ManifestBlobUnknown
            | Code::ManifestInvalid
            | Code::NameInvalid
            | Code::SizeInvalid
            | Code::BadRequest => StatusCode::BAD_REQUEST,
            Code::Unauthorized => StatusCode::UNAUTHORIZED,
            Code::Denied => StatusCode::FORBIDDEN,
            Code::Unsupported => StatusCode::METHOD_NOT_ALLOWED,
            Code::TooManyRequests => StatusCode::TOO_MANY_REQUESTS,
            Code::RangeInvalid => StatusCode::RANGE_NOT_SATISFIABLE,
            Code::Conflict => StatusCode::CONFLICT,
            Code::InsufficientStorage => StatusCode::INSUFFICIENT_STORAGE,
            Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Code::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// A failed request: what, and the status and headers it answers with.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    pub code: Code,
    pub message: String,
    /// Overrides the code's usual status (413 for oversize bodies, 416 for ranges).
    pub status: Option<StatusCode>,
    pub headers: Vec<(header::HeaderName, HeaderValue)>,
    pub detail: Option<serde_json::Value>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Error {
            code,
            message: message.into(),
            status: None,
            headers: Vec::new(),
            detail: None,
        }
    }

    pub fn with_status(mut self, status: StatusCode) -> Self {
        self.status = Some(status);
        self
    }

    pub fn with_header(mut self, name: header::HeaderName, value: &str) -> Self {
        if let Ok(value) = HeaderValue::from_str(value) {
            self.headers.push((name, value));
        }
        self
    }

    pub fn with_detail(mut self, detail: serde_json::Value) -> Self {
        self.detail = Some(detail);
        self
    }

    pub fn internal(what: impl std::fmt::Display) -> Self {
        tracing::error!(error = %what, "internal error");
        Error::new(
            Code::Internal,
            "the registry failed to complete the request; see its log",
        )
    }

    pub fn too_large(what: &str, limit: u64) -> Self {
        Error::new(
            Code::SizeInvalid,
            format!("{what} is larger than the limit of {limit} bytes"),
        )
        .with_status(StatusCode::PAYLOAD_TOO_LARGE)
    }

    pub fn status(&self) -> StatusCode {
        self.status.unwrap_or_else(|| self.code.status())
    }
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        Error::internal(format!("database: {e}"))
    }
}

/// A database that cannot be reached (PostgreSQL down, the connection lost) is
/// 503 Service Unavailable, so clients retry and the replica recovers by
/// reconnecting; a call not yet ported to PostgreSQL is a 501 saying so;
/// anything else the database refused is a 500 naming it.
impl From<crate::db::sql::SqlError> for Error {
    fn from(e: crate::db::sql::SqlError) -> Self {
        if let crate::db::sql::SqlError::NotOnPostgres(_) = e {
            // Not a failure to hide in the log: the caller is told what this
            // registry's backend cannot do yet (501), and where it can.
            return Error::new(
                Code::Unsupported,
                format!("{e}; a registry on SQLite answers it"),
            )
            .with_status(StatusCode::NOT_IMPLEMENTED);
        }
        if e.is_unavailable() {
            Error::new(
                Code::Unavailable,
                format!("{e}; retry once the database is back"),
            )
        } else {
            Error::internal(e.to_string())
        }
    }
}

/// As [`SqlError`](crate::db::sql::SqlError): 503 when PostgreSQL cannot be
/// reached, a 500 naming what it refused otherwise.
impl From<crate::db::sql::PgError> for Error {
    fn from(e: crate::db::sql::PgError) -> Self {
        crate::db::sql::SqlError::from(e).into()
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::internal(format!("storage: {e}"))
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let status = self.status();
        let mut error = json!({ "code": self.code.as_str(), "message": self.message });
        if let Some(detail) = self.detail {
            error["detail"] = detail;
        }
        let body = serde_json::to_vec(&json!({ "errors": [error] })).unwrap_or_default();
        let mut response = (status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        for (name, value) in self.headers {
            headers.append(name, value);
        }
        response
    }
}
