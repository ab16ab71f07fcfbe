//! `POST /api/v1/receipts`: a runner reports a deployment with a signed receipt.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use stackpack_schema::receipt::SignedReceipt;

use crate::api::ReceiptAccepted;
use crate::auth::Action;
use crate::controllers::context;
use crate::error::{Code, Error};
use crate::state::SharedState;

#[utoipa::path(
    post,
    path = "/api/v1/receipts",
    request_body(
        content = Object,
        description = "A signed receipt (`stackpack_schema::receipt::SignedReceipt`): `{receipt, algorithm, signature, publicKey}`",
        content_type = "application/json"
    ),
    responses(
        (status = 201, description = "Stored", body = ReceiptAccepted),
        (status = 200, description = "The same receipt was stored before", body = ReceiptAccepted),
        (status = 400, description = "Malformed, or the signature does not verify"),
        (status = 403, description = "The token may not report for this customer, or the key is not the customer's"),
        (status = 409, description = "Another receipt already has this id"),
    ),
    security(("bearer" = [])),
    tag = "ledger"
)]
pub async fn create(
    State(state): State<SharedState>,
    headers: HeaderMap,
    uri: Uri,
    body: Bytes,
) -> Response {
    let result = (|| {
        let ctx = context(&state, &headers, &uri)?;
        if body.len() as u64 > state.config.max_json_bytes {
            return Err(Error::too_large("the receipt", state.config.max_json_bytes));
        }
        let signed = SignedReceipt::from_bytes(&body)
            .map_err(|e| Error::new(Code::BadRequest, e.to_string()))?;
        ctx.authorize(Action::Report(&signed.receipt.customer))?;
        let created = crate::receipts::record(&state.db, &signed)?;
        Ok((created, signed.receipt.id))
    })();
    match result {
        Ok((created, receipt_id)) => (
            if created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            },
            axum::Json(ReceiptAccepted {
                receipt_id,
                created,
            }),
        )
            .into_response(),
        Err(e) => e.into_response(),
    }
}
