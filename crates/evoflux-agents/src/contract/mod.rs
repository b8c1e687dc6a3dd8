//! Result contracts: the typed terminal results a worker run must satisfy.
//!
//! [`kind`] is the closed union and its two front-matter parsers;
//! [`extract`] finds the JSON object in a final text; [`validate`] checks
//! each kind and returns conformance and quality; [`scout`] and
//! [`mutation`] ground claims in optional run [`evidence`], [`grounding`]
//! labels claimed checks against executed commands; [`shape`] holds
//! the single wire example of each kind; [`repair`] builds the repair
//! exchange.

pub mod evidence;
pub mod extract;
pub mod grounding;
pub mod kind;
pub mod mutation;
pub mod repair;
pub mod scout;
pub mod shape;
pub mod validate;

pub use evidence::{DiskFilesystem, ResultFilesystem, RunEffects, RunEvidence, ValidationContext};
pub use extract::{ExtractError, extract_json_object};
pub use grounding::{ClaimedValidationGrounding, GroundingBasis, ground_claimed_validations};
pub use kind::{
    ContractAuthor, KindTraits, ResultContract, ResultContractKind, parse_result_contract,
    parse_worker_result_contract,
};
pub use mutation::{ResultAuthorship, result_contract_authorship};
pub use repair::{
    RESULT_CONTRACT_ANCHOR_LIMIT, RESULT_CONTRACT_REPAIR_LIMIT, RESULT_CONTRACT_REPAIR_TOOL,
    RepairExchange, repair_call_id, repair_exchange, repair_message,
};
pub use scout::{ScoutFinding, ScoutReport, ScoutSubtask, parse_scout_result};
pub use shape::result_contract_shape;
pub use validate::{
    CodeReport, Conformance, FactConformance, Quality, RecipeResultOutcome, ResultContractFact,
    ResultContractValidation, parse_code_report, result_contract_output_bytes,
    validate_recipe_result, validate_result_contract,
};
