//! JSON parsed with every object's keys unique.
//!
//! `serde_json` keeps the last of two equal keys and says nothing, so a
//! `plugin.json` with `"version"` twice, or an `mcp.json` with a server
//! listed twice, would load as something its author never wrote in one
//! place. [`parse`] reads the text once into the same [`Value`] and
//! refuses a repeated key, naming its dotted path and its line.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// A key that appears twice in one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateKey {
    /// Dotted path of the repeated key, such as `version` or
    /// `mcpServers.github` (array elements as `[i]`).
    pub path: String,
    /// 1-based line of the second occurrence.
    pub line: u32,
}

/// Why the text is not a JSON document with unique keys.
#[derive(Debug)]
pub enum UniqueJsonError {
    Syntax(serde_json::Error),
    Duplicate(DuplicateKey),
}

/// Parses `text` into a [`Value`], refusing any object with a repeated key.
pub fn parse(text: &str) -> Result<Value, UniqueJsonError> {
    let found = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_str(text);
    let parsed = Node {
        path: String::new(),
        found: &found,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v));
    match (parsed, found.into_inner()) {
        (Ok(v), _) => Ok(v),
        (Err(e), Some(path)) => Err(UniqueJsonError::Duplicate(DuplicateKey {
            path,
            line: u32::try_from(e.line()).unwrap_or(u32::MAX),
        })),
        (Err(e), None) => Err(UniqueJsonError::Syntax(e)),
    }
}

/// One value at `path`; records the first repeated key in `found`. The
/// parser's error then carries the position just after that key.
struct Node<'a> {
    path: String,
    found: &'a RefCell<Option<String>>,
}

impl Node<'_> {
    fn child(&self, segment: &str) -> String {
        if self.path.is_empty() {
            segment.to_owned()
        } else if segment.starts_with('[') {
            format!("{}{segment}", self.path)
        } else {
            format!("{}.{segment}", self.path)
        }
    }
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Node {
            path: self.child(&format!("[{}]", out.len())),
            found: self.found,
        })? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = self.child(&key);
            if out.contains_key(&key) {
                *self.found.borrow_mut() = Some(path);
                return Err(de::Error::custom(format!("duplicate key `{key}`")));
            }
            let value = map.next_value_seed(Node {
                path,
                found: self.found,
            })?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_repeated_key_is_named_with_its_path_and_line() {
        let text = "{\n  \"a\": {\"x\": 1},\n  \"b\": [{\"k\": 1,\n    \"k\": 2}]\n}";
        match parse(text) {
            Err(UniqueJsonError::Duplicate(d)) => {
                assert_eq!(d.path, "b[0].k");
                assert_eq!(d.line, 4);
            }
            other => panic!("{other:?}"),
        }
        match parse("{\"v\": 1, \"v\": 1}") {
            Err(UniqueJsonError::Duplicate(d)) => assert_eq!((d.path.as_str(), d.line), ("v", 1)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unique_documents_parse_as_serde_json_does() {
        let text = r#"{"a": [1, -2, 3.5, "s", null, true], "b": {"c": {}}, "a2": []}"#;
        assert_eq!(
            parse(text).unwrap(),
            serde_json::from_str::<Value>(text).unwrap()
        );
        assert!(matches!(
            parse("{\"a\": 1,}"),
            Err(UniqueJsonError::Syntax(_))
        ));
        assert!(matches!(parse("{} x"), Err(UniqueJsonError::Syntax(_))));
    }
}
