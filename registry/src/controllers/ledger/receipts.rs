//! `POST /api/v1/receipts`: a runner reports a deployment with a signed receipt.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use stackpack_schema::receipt::SignedReceipt;

use crate::api::ReceiptAccepted;
use crate::auth::Action;
use crate::controllers::{read_limited, Authorised, MayReport};
use crate::error::{Code, Error, Result};
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
    Authorised { ctx, body, .. }: Authorised<MayReport>,
) -> Result<impl IntoResponse> {
    let body = read_limited(body, &state.config, "the receipt").await?;
    let signed = SignedReceipt::from_bytes(&body)
        .map_err(|e| Error::new(Code::BadRequest, e.to_string()))?;
    ctx.authorize(Action::Report(&signed.receipt.customer))?;
    let created = crate::receipts::record(&state.db, &signed)?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let receipt_id = signed.receipt.id;
    Ok((
        status,
        Json(ReceiptAccepted {
            receipt_id,
            created,
        }),
    ))
}
