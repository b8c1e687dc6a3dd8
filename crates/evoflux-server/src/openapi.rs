//! The OpenAPI 3.1 document, generated from the handlers' annotations and
//! the request and response types, and served at `/openapi.json`.

use std::sync::OnceLock;

use utoipa::OpenApi;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};

use crate::api::{agents, lists, mcp, plugins, scheduler, sessions, skills, system, trust, viewer};
use crate::error::ApiError;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "evoflux",
        description = "The HTTP API of `evoflux serve`. Every route but /api/health needs `Authorization: Bearer <token>`.",
        license(name = "MIT OR Apache-2.0")
    ),
    paths(
        system::health,
        system::info,
        system::openapi,
        crate::api::highlight::highlight_block,
        sessions::create,
        sessions::list,
        sessions::show,
        sessions::rename,
        sessions::delete,
        sessions::message,
        sessions::events,
        sessions::answer,
        sessions::approve,
        sessions::answer_elicitation,
        sessions::cancel,
        sessions::resume,
        sessions::artifact,
        sessions::media,
        sessions::snapshot,
        sessions::transcript,
        sessions::commands,
        crate::preview::list,
        sessions::attach,
        lists::agents,
        agents::create,
        agents::show_work,
        agents::show_coding,
        agents::replace_work,
        agents::replace_coding,
        agents::delete_work,
        agents::delete_coding,
        agents::read_form_view,
        agents::write_form_view,
        lists::skills,
        lists::skill_settings,
        skills::create,
        skills::show,
        skills::replace,
        skills::update_prefs,
        skills::delete,
        lists::plugins,
        plugins::inspect,
        plugins::install,
        plugins::upload,
        plugins::create,
        plugins::pack,
        plugins::tree,
        plugins::file,
        plugins::save_file,
        plugins::create_entry,
        plugins::delete_entry,
        plugins::show,
        plugins::uninstall,
        plugins::update,
        plugins::update_upload,
        plugins::set_enabled,
        plugins::credentials,
        plugins::set_credentials,
        plugins::clear_credentials,
        mcp::list,
        mcp::show,
        mcp::add,
        mcp::replace,
        mcp::remove,
        mcp::restart,
        crate::api::mcp_oauth::login,
        crate::api::mcp_oauth::callback,
        scheduler::list,
        scheduler::show,
        scheduler::history,
        scheduler::run,
        scheduler::set_enabled,
        trust::show,
        trust::grant,
        trust::revoke,
        viewer::files,
        viewer::document,
    ),
    components(schemas(
        ApiError,
        system::Health,
        crate::api::highlight::HighlightRequest,
        crate::api::highlight::Highlighted,
        sessions::CreateSession,
        sessions::SessionCreated,
        sessions::TextBody,
        sessions::ResumeBody,
        sessions::ApprovalBody,
        sessions::ElicitationBody,
        sessions::ElicitationChoice,
        sessions::Decision,
        sessions::Accepted,
        sessions::SessionSummary,
        lists::Listing,
        mcp::NewMcpServer,
        mcp::McpServerBody,
        agents::NewAgent,
        agents::AgentContent,
        agents::FormRead,
        agents::FormView,
        agents::FormWrite,
        agents::FormWritten,
        skills::PrefsBody,
        skills::PrefsResult,
        skills::NewSkill,
        skills::SkillEdit,
        skills::FileBody,
        skills::SkillDetail,
        skills::Deleted,
        plugins::InstallMode,
        plugins::InstallBody,
        plugins::ArchiveUpload,
        plugins::UpdateBody,
        plugins::CreateBody,
        plugins::PackBody,
        plugins::SaveBody,
        plugins::NewEntry,
        plugins::EnabledBody,
        scheduler::ScheduleEnabledBody,
        scheduler::ScheduleListing,
        plugins::CredentialsBody,
        viewer::FileListing,
        trust::TrustShown,
        trust::GrantBody,
        viewer::FileEntry,
    )),
    modifiers(&BearerAuth),
    security(("bearer" = []))
)]
pub struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The document as JSON, built once.
pub fn document() -> &'static str {
    static DOC: OnceLock<String> = OnceLock::new();
    DOC.get_or_init(|| {
        let mut doc = ApiDoc::openapi();
        doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
        // Health and this document are public.
        for public in ["/api/health", "/openapi.json"] {
            if let Some(item) = doc.paths.paths.get_mut(public)
                && let Some(op) = item.get.as_mut()
            {
                op.security = Some(Vec::new());
            }
        }
        doc.to_json().unwrap_or_else(|_| "{}".to_owned())
    })
}
