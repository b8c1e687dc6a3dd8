//! The repair exchange: how a worker is asked to fix a result that missed
//! its contract.
//!
//! A repair round is a protocol-legal tool exchange: a synthetic assistant
//! call to `result_contract` and an error tool result answering it, sharing
//! one id. Strict providers reject a bare user message after tool use, and
//! the assistant half carries explicit zero usage so token accounting never
//! meets a missing count. A worker gets [`RESULT_CONTRACT_REPAIR_LIMIT`]
//! rounds; after that the run fails with the last reason.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::kind::ResultContract;
use super::shape::result_contract_shape;

/// Repair rounds a worker gets after its first terminal answer.
pub const RESULT_CONTRACT_REPAIR_LIMIT: u32 = 2;
/// How many of the run's last successful read locations are quoted.
pub const RESULT_CONTRACT_ANCHOR_LIMIT: usize = 12;
/// The synthetic tool's name.
pub const RESULT_CONTRACT_REPAIR_TOOL: &str = "result_contract";

/// The id both halves of round `attempt` (1-based) share.
pub fn repair_call_id(attempt: u32) -> String {
    format!("evoflux-result-contract-repair-{attempt}")
}

/// Token usage, all zero for a synthetic message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ZeroUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RepairStopReason {
    ToolUse,
}

/// The synthetic assistant half.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepairCall {
    pub id: String,
    pub name: String,
    pub arguments: Map<String, Value>,
    pub stop_reason: RepairStopReason,
    pub usage: ZeroUsage,
}

/// The tool-result half.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepairResult {
    pub tool_call_id: String,
    pub is_error: bool,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepairExchange {
    pub attempt: u32,
    pub call: RepairCall,
    pub result: RepairResult,
}

/// The text of round `attempt`: the reason, the exact shape and the last
/// locations the run read.
pub fn repair_message(attempt: u32, reason: &str, shape: &str, anchors: &[String]) -> String {
    let mut lines = vec![
        if attempt >= RESULT_CONTRACT_REPAIR_LIMIT {
            "FINAL RESULT REQUIRED IN THIS RESPONSE. Your previous response still did not \
             satisfy this run's result contract."
                .to_owned()
        } else {
            "Your previous response did not satisfy this run's result contract.".to_owned()
        },
        format!("Validator reason: {reason}"),
        "Tool use is over. Answer from the evidence you already gathered.".to_owned(),
        format!("Emit exactly this shape and nothing else: {shape}"),
        "Do not add prose, code fences, or commentary around it. Do not describe work you \
         intend to do next."
            .to_owned(),
    ];
    let skip = anchors.len().saturating_sub(RESULT_CONTRACT_ANCHOR_LIMIT);
    let last = &anchors[skip..];
    if !last.is_empty() {
        lines.push(String::new());
        lines.push(
            "Locations you read successfully in this run (use these exact path:line values):"
                .to_owned(),
        );
        lines.extend(last.iter().map(|a| format!("- {a}")));
    }
    lines.join("\n")
}

/// Builds round `attempt` (1-based) for `contract`.
pub fn repair_exchange(
    attempt: u32,
    reason: &str,
    contract: &ResultContract,
    anchors: &[String],
) -> RepairExchange {
    let id = repair_call_id(attempt);
    RepairExchange {
        attempt,
        call: RepairCall {
            id: id.clone(),
            name: RESULT_CONTRACT_REPAIR_TOOL.to_owned(),
            arguments: Map::new(),
            stop_reason: RepairStopReason::ToolUse,
            usage: ZeroUsage::default(),
        },
        result: RepairResult {
            tool_call_id: id,
            is_error: true,
            text: repair_message(attempt, reason, &result_contract_shape(contract), anchors),
        },
    }
}
