//! `GET /api/v1/openapi.json`: the ledger API's OpenAPI document.

use axum::response::{IntoResponse, Response};
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::api;
use crate::controllers::{forecasts, ledger, rollouts};

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "stackpack-registry ledger",
        description = "Stack versions (`/api/v1/releases?stack=`, named before whole-environment releases), releases of a whole environment (`/api/v1/releases/{name}/…`), customers, deployments and support's questions. Errors use the OCI distribution error body: `{\"errors\":[{\"code\",\"message\",\"detail\"}]}`."
    ),
    paths(
        ledger::releases::handle,
        ledger::releases::create,
        ledger::stacks::handle,
        ledger::customers::list,
        ledger::customers::create,
        ledger::customers::show,
        ledger::customers::history,
        ledger::customers::add_key,
        ledger::customers::revoke_key,
        ledger::deployments::handle,
        ledger::receipts::create,
        ledger::support::versions,
        ledger::support::behind,
        ledger::support::prerelease,
        ledger::support::drifted,
        ledger::fleet::handle,
        ledger::fleet::failed_syncs_handle,
        ledger::adoption::handle,
        ledger::release_versions::list,
        ledger::release_versions::show,
        ledger::release_fleet::handle,
        rollouts::assignment::show,
        rollouts::sync::create,
        rollouts::placement::update,
        rollouts::release_receipts::create,
        rollouts::channels::list,
        rollouts::channels::update,
        rollouts::list::handle,
        rollouts::show::handle,
        rollouts::control::pause,
        rollouts::control::resume,
        rollouts::control::abort,
        forecasts::put::handle,
        forecasts::show::handle,
        forecasts::targets::handle,
    ),
    components(schemas(
        api::Release,
        api::NewRelease,
        api::Source,
        api::Customer,
        api::NewCustomer,
        api::NewInstallationKey,
        api::InstallationKey,
        api::Deployment,
        api::Running,
        api::ReceiptAccepted,
        api::Stack,
        api::Attempt,
        api::FleetRow,
        api::ReleaseModule,
        api::Adoption,
        api::AdoptionPoint,
        ledger::customers::CustomerDetail,
        api::ReleaseVersion,
        api::ReleaseSnapshot,
        api::ReleaseStackPart,
        api::ReleaseServicePart,
        api::ReleaseFleetRow,
        api::MixedStack,
        api::MixedReason,
        api::DeployedRelease,
        api::CustomerRelease,
        api::Channel,
        api::NewChannel,
        api::CustomerPlacement,
        api::Placement,
        api::CustomerSync,
        api::Rollout,
        api::RolloutState,
        api::RolloutAssignment,
        api::RolloutEvent,
        api::RolloutDetail,
        api::Gate,
        api::EventKind,
    )),
    modifiers(&BearerAuth)
)]
pub struct ApiDoc;

pub async fn handle() -> Response {
    axum::Json(ApiDoc::openapi()).into_response()
}
