//! `POST /api/v1/release-receipts`: a runner reports a release applied, rolled back
//! or destroyed, with a receipt signed by its installation key.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use stackpack_schema::release_receipt::SignedReleaseReceipt;

use crate::api::ReceiptAccepted;
use crate::auth::Action;
use crate::controllers::{read_limited, Authorised, MayReport};
use crate::error::{Code, Error, Result};
use crate::state::SharedState;

#[utoipa::path(
    post,
    path = "/api/v1/release-receipts",
    request_body(
        content = Object,
        description = "A signed release receipt (`stackpack_schema::release_receipt::SignedReleaseReceipt`): `{receipt, algorithm, signature, publicKey}`",
        content_type = "application/json"
    ),
    responses(
        (status = 201, description = "Stored; the customer's rollouts re-read their health gate", body = ReceiptAccepted),
        (status = 200, description = "The same receipt was stored before", body = ReceiptAccepted),
        (status = 400, description = "Malformed, or the signature does not verify"),
        (status = 403, description = "The token may not report for this customer, or the key is not the customer's"),
        (status = 409, description = "Another release receipt already has this id"),
    ),
    security(("bearer" = [])),
    tag = "rollouts"
)]
pub async fn create(
    State(state): State<SharedState>,
    Authorised { ctx, body, .. }: Authorised<MayReport>,
) -> Result<impl IntoResponse> {
    let body = read_limited(body, &state.config, "the release receipt").await?;
    let signed: SignedReleaseReceipt = serde_json::from_slice(&body).map_err(|e| {
        Error::new(
            Code::BadRequest,
            format!("the body is not a signed release receipt: {e}"),
        )
    })?;
    ctx.authorize(Action::Report(&signed.receipt.customer))?;
    let created = crate::rollout::record_release_receipt(&state.db, &signed)?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(ReceiptAccepted {
            receipt_id: signed.receipt.id,
            created,
        }),
    ))
}
