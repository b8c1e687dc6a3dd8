//! `[prices]`: what models cost, over the built-in table (the entries are
//! [`crate::price`]'s); only the user's and the admin's files may set it.

use std::collections::BTreeMap;
use std::path::Path;

use super::layer::ConfigScope;
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::price::{Price, PriceEntry};

/// `[prices]`: keys a lookup can match and valid amounts, and only in the
/// user's or admin's file (what a repository says your calls cost would
/// be its word about your bill).
pub(super) fn check_prices(
    path: &Path,
    scope: ConfigScope,
    entries: &BTreeMap<String, PriceEntry>,
    diags: &mut Diagnostics,
) -> BTreeMap<String, Price> {
    if let (ConfigScope::Project(_), false) = (scope, entries.is_empty()) {
        diags.push(
            Diagnostic::error(
                "config/project-prices",
                "a repository's config cannot set [prices]: what your model calls cost is \
                 yours to say; set it in your own config.toml and remove it here",
            )
            .with_file(path)
            .with_field("prices"),
        );
        return BTreeMap::new();
    }
    let mut prices = BTreeMap::new();
    for (key, entry) in entries {
        if !crate::price::is_price_key(key) {
            diags.push(
                Diagnostic::error(
                    "config/price-key-invalid",
                    format!(
                        "`{key}` is not a price key: write `provider:model`, `provider:*` \
                         or a model name"
                    ),
                )
                .with_file(path)
                .with_field(format!("prices.{key}")),
            );
            continue;
        }
        match entry.price() {
            Ok(price) => {
                prices.insert(key.clone(), price);
            }
            Err(field) => diags.push(
                Diagnostic::error(
                    "config/price-invalid",
                    format!(
                        "prices.\"{key}\".{field} must be a price in US dollars per million \
                         tokens, zero or more"
                    ),
                )
                .with_file(path)
                .with_field(format!("prices.{key}.{field}")),
            ),
        }
    }
    prices
}
