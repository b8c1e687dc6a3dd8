//! JSON Schema violations written for the model that has to fix them.

use serde_json::Value;

/// At most `limit` violations of `value`, each prefixed with the JSON
/// pointer of the offending part (`/path: …`) so the model knows where.
pub(crate) fn schema_errors(
    validator: &jsonschema::Validator,
    value: &Value,
    limit: usize,
) -> Vec<String> {
    validator
        .iter_errors(value)
        .take(limit)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .collect()
}
