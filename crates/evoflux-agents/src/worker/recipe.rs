//! The strict worker recipe dialect.
//!
//! A recipe is a contract: every key is required (except `product`), no
//! unknown key is tolerated, no value is coerced. The id is the file stem,
//! never a front-matter value. The audience is provenance, decided by where
//! the recipe was found: framework recipes may be `base`, `shadow` or
//! `internal`; everything else must say `custom`, and a recipe claiming
//! otherwise is rejected rather than silently rewritten, because its author
//! would still believe it hidden.

use std::collections::BTreeMap;
use std::path::Path;

use evoflux_core::{Diagnostic, Diagnostics};
use evoflux_graph::Layer;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::spec::{AGENT_SPEC_VERSION, AgentSpec};
use crate::closed::closed_enum;
use crate::contract::parse_result_contract;

closed_enum!(
    /// Who a worker is for; provenance, not a claim.
    Audience {
        Base => "base",
        Shadow => "shadow",
        Custom => "custom",
        Internal => "internal",
    }
);

closed_enum!(
    /// Display grouping; never read by routing.
    Category {
        Explore => "explore",
        Plan => "plan",
        Research => "research",
        Implement => "implement",
        Quality => "quality",
        Science => "science",
        Evolution => "evolution",
        Operations => "operations",
        Internal => "internal",
    }
);

closed_enum!(
    /// What a worker may do; the capability policy maps it to the action
    /// classes of the tools it declares.
    CapabilityClass {
        ReadOnly => "read-only",
        ArtifactWrite => "artifact-write",
        WorkspaceEdit => "workspace-edit",
        Verification => "verification",
        Orchestration => "orchestration",
        Internal => "internal",
    }
);

closed_enum!(
    /// Cold-start route prior: fast < balanced < deep.
    LatencyClass {
        Fast => "fast",
        Balanced => "balanced",
        Deep => "deep",
    }
);

closed_enum!(
    /// Whether a bounded projection of the project's instructions is sent.
    ProjectContextTier {
        None => "none",
        Bounded => "bounded",
    }
);

closed_enum!(
    /// Optional product shape; `orientation` widens the read-reserve window.
    Product {
        Orientation => "orientation",
    }
);

impl LatencyClass {
    /// The cold-start prior; strictly increasing with depth.
    pub const fn prior(self) -> f64 {
        match self {
            LatencyClass::Fast => 0.35,
            LatencyClass::Balanced => 0.5,
            LatencyClass::Deep => 0.65,
        }
    }
}

impl Audience {
    /// Shown to operators (`base`, `custom`); `shadow` and `internal` are
    /// dispatch-only.
    pub const fn is_user_visible(self) -> bool {
        match self {
            Audience::Base | Audience::Custom => true,
            Audience::Shadow | Audience::Internal => false,
        }
    }
}

/// Where a recipe was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RecipeSource {
    /// Compiled into evoflux.
    Framework,
    /// An installed or bundled plugin.
    Plugin,
    Admin,
    User,
    Project,
}

impl RecipeSource {
    pub const fn from_layer(layer: Layer) -> RecipeSource {
        match layer {
            Layer::Framework => RecipeSource::Framework,
            Layer::BundledPlugin | Layer::Plugin => RecipeSource::Plugin,
            Layer::Admin => RecipeSource::Admin,
            Layer::User => RecipeSource::User,
            Layer::Project => RecipeSource::Project,
        }
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            RecipeSource::Framework => "framework",
            RecipeSource::Plugin => "plugin",
            RecipeSource::Admin => "admin",
            RecipeSource::User => "user",
            RecipeSource::Project => "project",
        }
    }
}

/// One entry of `tools.required`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolRequirement {
    Tool(String),
    AnyOf {
        #[serde(rename = "anyOf")]
        any_of: Vec<String>,
    },
}

impl ToolRequirement {
    /// The tool names that satisfy this requirement.
    pub fn members(&self) -> &[String] {
        match self {
            ToolRequirement::Tool(t) => std::slice::from_ref(t),
            ToolRequirement::AnyOf { any_of } => any_of,
        }
    }

    /// `name` or `anyOf(a|b)` in declared order, as compatibility reports it.
    pub fn render(&self) -> String {
        match self {
            ToolRequirement::Tool(t) => t.clone(),
            ToolRequirement::AnyOf { any_of } => format!("anyOf({})", any_of.join("|")),
        }
    }
}

/// `tools: {required, optional}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolRequirements {
    pub required: Vec<ToolRequirement>,
    pub optional: Vec<String>,
}

impl ToolRequirements {
    /// Every declared name: required names, anyOf members, optional; in
    /// declaration order.
    pub fn flatten(&self) -> Vec<String> {
        self.required
            .iter()
            .flat_map(|r| r.members().iter().cloned())
            .chain(self.optional.iter().cloned())
            .collect()
    }
}

/// A worker's call budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Budget {
    pub tool_calls: u32,
    pub read_reserve: u32,
    pub synthesis: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum: Option<BudgetMaximum>,
}

/// The ceiling an invocation may raise the budget to; absent pins the
/// default exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetMaximum {
    pub tool_calls: u32,
    pub read_reserve: u32,
}

/// A parsed recipe: the worker it declares, held as the one type of a
/// worker's fields, [`AgentSpec`], whose `tool_classes` are still empty.
/// A recipe becomes a spec dispatch may use only through
/// [`normalize_agent_spec`](super::spec::normalize_agent_spec), which
/// resolves its tools against a graph and checks them against their
/// requirements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerRecipe {
    pub spec: AgentSpec,
}

/// Required keys, in the order problems are reported.
pub const RECIPE_KEYS: [&str; 13] = [
    "version",
    "name",
    "description",
    "tools",
    "skills",
    "audience",
    "category",
    "capabilityClass",
    "latencyClass",
    "projectContextTier",
    "budget",
    "resultContract",
    "tags",
];

/// Optional keys.
pub const OPTIONAL_RECIPE_KEYS: [&str; 1] = ["product"];

/// Ids the dispatch protocol routes specially; no file recipe may use them.
pub const RESERVED_CUSTOM_AGENT_IDS: [&str; 3] = ["worker", "delegate", "auto"];

struct Checker<'a> {
    path: &'a Path,
    diags: Diagnostics,
}

impl Checker<'_> {
    fn err(&mut self, code: &'static str, field: &str, msg: impl Into<String>) {
        let d = Diagnostic::error(code, msg.into()).with_file(self.path);
        let d = if field.is_empty() {
            d
        } else {
            d.with_field(field.to_owned())
        };
        self.diags.push(d);
    }

    fn non_empty_string(&mut self, map: &Map<String, Value>, key: &str) -> Option<String> {
        match map.get(key)? {
            Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
            _ => {
                self.err(
                    "worker/field-invalid",
                    key,
                    format!("{key} must be a non-empty string"),
                );
                None
            }
        }
    }

    fn string_list(&mut self, map: &Map<String, Value>, key: &str) -> Option<Vec<String>> {
        let Value::Array(items) = map.get(key)? else {
            self.err(
                "worker/field-invalid",
                key,
                format!("{key} must be an array"),
            );
            return None;
        };
        let mut out: Vec<String> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            match item {
                Value::String(s) if !s.trim().is_empty() => {
                    if out.contains(s) {
                        self.err(
                            "worker/field-invalid",
                            key,
                            format!("{key} must not contain duplicates"),
                        );
                        return None;
                    }
                    out.push(s.clone());
                }
                _ => {
                    self.err(
                        "worker/field-invalid",
                        key,
                        format!("{key}[{i}] must be a non-empty string"),
                    );
                    return None;
                }
            }
        }
        Some(out)
    }

    fn closed<T>(
        &mut self,
        map: &Map<String, Value>,
        key: &str,
        parse: fn(&str) -> Option<T>,
    ) -> Option<T> {
        let v = map.get(key)?;
        match v.as_str().and_then(parse) {
            Some(t) => Some(t),
            None => {
                self.err(
                    "worker/value-unsupported",
                    key,
                    format!("{key} has an unsupported value"),
                );
                None
            }
        }
    }
}

fn tool_name(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        _ => None,
    }
}

fn parse_tools(c: &mut Checker<'_>, v: &Value) -> Option<ToolRequirements> {
    let mut fail = |msg: &str| {
        c.err("worker/tools-invalid", "tools", msg);
        None
    };
    let Value::Object(map) = v else {
        return fail("tools must be a { required, optional } object");
    };
    if map.keys().any(|k| k != "required" && k != "optional") {
        return fail("tools has an unknown key");
    }
    let (Some(req), Some(opt)) = (map.get("required"), map.get("optional")) else {
        return fail("tools.required and tools.optional are required");
    };
    let (Value::Array(req), Value::Array(opt)) = (req, opt) else {
        return fail("tools.required and tools.optional must be arrays");
    };
    let mut required = Vec::new();
    for (i, r) in req.iter().enumerate() {
        if let Some(t) = tool_name(r) {
            required.push(ToolRequirement::Tool(t));
            continue;
        }
        let Value::Object(group) = r else {
            return fail(&format!(
                "tools.required[{i}] must be a tool name or {{ anyOf: [...] }}"
            ));
        };
        if group.len() != 1 || !group.contains_key("anyOf") {
            return fail(&format!("tools.required[{i}] must contain only anyOf"));
        }
        let Some(Value::Array(members)) = group.get("anyOf") else {
            return fail(&format!("tools.required[{i}].anyOf must be an array"));
        };
        if members.is_empty() {
            return fail(&format!("tools.required[{i}].anyOf must not be empty"));
        }
        let mut any_of: Vec<String> = Vec::new();
        for m in members {
            match tool_name(m) {
                Some(t) if !any_of.contains(&t) => any_of.push(t),
                Some(_) => return fail(&format!("tools.required[{i}].anyOf has duplicates")),
                None => {
                    return fail(&format!(
                        "tools.required[{i}].anyOf must contain tool names"
                    ));
                }
            }
        }
        required.push(ToolRequirement::AnyOf { any_of });
    }
    let mut optional = Vec::new();
    for (i, o) in opt.iter().enumerate() {
        match tool_name(o) {
            Some(t) => optional.push(t),
            None => return fail(&format!("tools.optional[{i}] must be a tool name")),
        }
    }
    let tools = ToolRequirements { required, optional };
    let flat = tools.flatten();
    let mut seen = std::collections::HashSet::new();
    if !flat.iter().all(|t| seen.insert(t)) {
        return fail("tools contains duplicate requirements");
    }
    Some(tools)
}

fn safe_int(v: Option<&Value>) -> Result<i64, &'static str> {
    match v {
        None => Err("required"),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(i) if i.unsigned_abs() < (1u64 << 53) => Ok(i),
            _ => Err("finite"),
        },
        Some(_) => Err("finite"),
    }
}

fn parse_budget(c: &mut Checker<'_>, v: &Value) -> Option<Budget> {
    let mut fail = |msg: String| {
        c.err("worker/budget-invalid", "budget", msg);
        None
    };
    let Value::Object(map) = v else {
        return fail("budget must be a non-null YAML object".into());
    };
    for k in map.keys() {
        if !matches!(
            k.as_str(),
            "toolCalls" | "readReserve" | "synthesis" | "maximum"
        ) {
            return fail(format!("budget.{k} is unknown"));
        }
    }
    let phase =
        |prefix: &str, map: &Map<String, Value>, relation: &str| -> Result<(u32, u32), String> {
            let calls = match safe_int(map.get("toolCalls")) {
                Ok(n) => n,
                Err("required") => return Err(format!("{prefix}.toolCalls is required")),
                Err(_) => return Err(format!("{prefix}.toolCalls must be a finite safe integer")),
            };
            if calls <= 0 {
                return Err(format!("{prefix}.toolCalls must be greater than 0"));
            }
            let reserve = match safe_int(map.get("readReserve")) {
                Ok(n) => n,
                Err("required") => return Err(format!("{prefix}.readReserve is required")),
                Err(_) => {
                    return Err(format!(
                        "{prefix}.readReserve must be a finite safe integer"
                    ));
                }
            };
            if reserve < 0 {
                return Err(format!(
                    "{prefix}.readReserve must be greater than or equal to 0"
                ));
            }
            if reserve >= calls {
                return Err(format!("{prefix}.readReserve must be less than {relation}"));
            }
            let to_u32 = |n: i64| u32::try_from(n).map_err(|_| format!("{prefix} is too large"));
            Ok((to_u32(calls)?, to_u32(reserve)?))
        };
    let (tool_calls, read_reserve) = match phase("budget", map, "budget.toolCalls") {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let synthesis = match map.get("synthesis") {
        Some(Value::Bool(b)) => *b,
        None => return fail("budget.synthesis is required".into()),
        Some(_) => return fail("budget.synthesis must be a boolean".into()),
    };
    let maximum = match map.get("maximum") {
        None => None,
        Some(Value::Object(m)) => {
            if let Some(k) = m
                .keys()
                .find(|k| !matches!(k.as_str(), "toolCalls" | "readReserve"))
            {
                return fail(format!("budget.maximum.{k} is unknown"));
            }
            let (mc, mr) = match phase("budget.maximum", m, "budget.maximum.toolCalls") {
                Ok(p) => p,
                Err(e) => return fail(e),
            };
            if mc < tool_calls {
                return fail(
                    "budget.maximum.toolCalls must be greater than or equal to budget.toolCalls"
                        .into(),
                );
            }
            if mr < read_reserve {
                return fail(
                    "budget.maximum.readReserve must be greater than or equal to \
                     budget.readReserve"
                        .into(),
                );
            }
            Some(BudgetMaximum {
                tool_calls: mc,
                read_reserve: mr,
            })
        }
        Some(_) => return fail("budget.maximum must be a non-null YAML object".into()),
    };
    Some(Budget {
        tool_calls,
        read_reserve,
        synthesis,
        maximum,
    })
}

/// Parses one recipe. `id` is the file stem; `source` is where the recipe
/// was discovered. Every problem is pushed to `diags`; `None` means the
/// recipe is defective.
pub fn parse_recipe(
    id: &str,
    source: RecipeSource,
    path: &Path,
    text: &str,
    diags: &mut Diagnostics,
) -> Option<WorkerRecipe> {
    let doc = match evoflux_core::frontmatter::parse_file(path, text) {
        Ok(d) => d,
        Err(d) => {
            diags.push(d);
            return None;
        }
    };
    let mut c = Checker {
        path,
        diags: Diagnostics::new(),
    };
    if !doc.has_front_matter {
        c.err(
            "worker/frontmatter-missing",
            "",
            "missing YAML frontmatter opening delimiter",
        );
        diags.extend(c.diags);
        return None;
    }
    let Ok(Value::Object(map)) = serde_json::to_value(&doc.mapping) else {
        c.err(
            "worker/field-invalid",
            "",
            "frontmatter must be a YAML object with string keys",
        );
        diags.extend(c.diags);
        return None;
    };
    for k in map.keys() {
        if !RECIPE_KEYS.contains(&k.as_str()) && !OPTIONAL_RECIPE_KEYS.contains(&k.as_str()) {
            c.err("worker/key-unknown", k, format!("unknown key '{k}'"));
        }
    }
    for k in RECIPE_KEYS {
        if !map.contains_key(k) {
            c.err("worker/key-missing", k, format!("{k} is required"));
        }
    }
    if c.diags.has_errors() {
        diags.extend(c.diags);
        return None;
    }
    if map.get("version") != Some(&Value::from(1)) {
        c.err(
            "worker/version-unsupported",
            "version",
            "version must be the supported integer 1",
        );
    }
    let body = doc.body.trim().to_owned();
    if body.is_empty() {
        c.err("worker/body-empty", "", "persona body must not be empty");
    }
    let name = c.non_empty_string(&map, "name");
    let description = c.non_empty_string(&map, "description");
    let tools = map.get("tools").and_then(|v| parse_tools(&mut c, v));
    let skills = c.string_list(&map, "skills");
    let tags = c.string_list(&map, "tags");
    let audience = c.closed(&map, "audience", Audience::parse);
    let category = c.closed(&map, "category", Category::parse);
    let capability_class = c.closed(&map, "capabilityClass", CapabilityClass::parse);
    let latency_class = c.closed(&map, "latencyClass", LatencyClass::parse);
    let project_context_tier = c.closed(&map, "projectContextTier", ProjectContextTier::parse);
    let product = if map.contains_key("product") {
        c.closed(&map, "product", Product::parse).map(Some)
    } else {
        Some(None)
    };
    let budget = map.get("budget").and_then(|v| parse_budget(&mut c, v));
    let result_contract = match map.get("resultContract").map(parse_result_contract) {
        Some(Ok(rc)) => Some(rc),
        Some(Err(msg)) => {
            c.err("worker/result-contract-invalid", "resultContract", msg);
            None
        }
        None => None,
    };
    if let Some(a) = audience {
        match (source, a) {
            (RecipeSource::Framework, Audience::Custom) => c.err(
                "worker/audience-invalid",
                "audience",
                "a framework recipe must not declare audience 'custom'",
            ),
            (RecipeSource::Framework, Audience::Base | Audience::Shadow | Audience::Internal) => {}
            (_, Audience::Custom) => {}
            (
                RecipeSource::Plugin
                | RecipeSource::Admin
                | RecipeSource::User
                | RecipeSource::Project,
                Audience::Base | Audience::Shadow | Audience::Internal,
            ) => c.err(
                "worker/audience-invalid",
                "audience",
                format!(
                    "a {} recipe must declare audience 'custom', not '{a}'; audience follows where \
                     the recipe was discovered and cannot be claimed in frontmatter",
                    source.as_str()
                ),
            ),
        }
    }
    let errors = c.diags.has_errors();
    diags.extend(c.diags);
    if errors {
        return None;
    }
    let tool_requirements = tools?;
    Some(WorkerRecipe {
        spec: AgentSpec {
            version: AGENT_SPEC_VERSION,
            id: id.to_owned(),
            name: name?,
            description: description?,
            // Parsing refused empty and duplicate names, so the flattened
            // requirements are the declared tools.
            tools: tool_requirements.flatten(),
            tool_requirements,
            skills: skills?,
            audience: audience?,
            category: category?,
            capability_class: capability_class?,
            latency_class: latency_class?,
            project_context_tier: project_context_tier?,
            budget: budget?,
            result_contract: result_contract?,
            tags: tags?,
            product: product?,
            source,
            path: Some(path.to_path_buf()),
            // Resolved against a graph by `normalize_agent_spec`.
            tool_classes: BTreeMap::new(),
            body,
        },
    })
}
