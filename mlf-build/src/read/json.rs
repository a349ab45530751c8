//! A path-tracking view over `serde_json::Value`, so that every error names the JSON field it is
//! about (`modules.default.memory.functions.main[0].workspace_size_bytes`).

use serde_json::Value;

use crate::error::{Error, ErrorKind, Result};

/// Maximum JSON document size accepted (16 MiB: TVM's largest graph configs are a few MB, and a
/// parsed document costs up to about 40 times its text in memory).
pub const MAX_JSON_BYTES: usize = 16 << 20;

/// Parses a JSON document, with a size limit.
pub fn parse(text: &[u8]) -> Result<Value> {
    if text.len() > MAX_JSON_BYTES {
        return Err(Error::new(ErrorKind::TooLarge {
            what: "JSON document".into(),
            size: text.len() as u64,
            limit: MAX_JSON_BYTES as u64,
        }));
    }
    serde_json::from_slice(text).map_err(|e| Error::new(ErrorKind::Json(e.to_string())))
}

/// A JSON value together with its path from the document root.
#[derive(Clone)]
pub struct J<'a> {
    /// The value.
    pub v: &'a Value,
    /// Its path (`a.b[3].c`); empty at the root.
    pub path: String,
}

impl<'a> J<'a> {
    /// The document root.
    pub fn root(v: &'a Value) -> Self {
        J { v, path: String::new() }
    }

    fn child_path(&self, key: &str) -> String {
        if self.path.is_empty() { key.to_string() } else { format!("{}.{key}", self.path) }
    }

    /// An error located at this value.
    pub fn err(&self, msg: impl Into<String>) -> Error {
        let mut e = Error::invalid(msg);
        if !self.path.is_empty() {
            e.field = Some(self.path.clone());
        }
        e
    }

    /// An error of a given kind located at this value.
    pub fn err_kind(&self, kind: ErrorKind) -> Error {
        let mut e = Error::new(kind);
        if !self.path.is_empty() {
            e.field = Some(self.path.clone());
        }
        e
    }

    /// A required key of an object.
    pub fn get(&self, key: &str) -> Result<J<'a>> {
        match self.opt(key)? {
            Some(j) => Ok(j),
            None => {
                let mut e = Error::missing(format!("key {key:?}"));
                e.field = Some(self.child_path(key));
                Err(e)
            }
        }
    }

    /// An optional key of an object (`null` counts as absent).
    pub fn opt(&self, key: &str) -> Result<Option<J<'a>>> {
        let obj = self.v.as_object().ok_or_else(|| self.err(format!("expected an object, found {}", kind(self.v))))?;
        Ok(obj.get(key).filter(|v| !v.is_null()).map(|v| J { v, path: self.child_path(key) }))
    }

    /// True when this value is an object holding `key`.
    pub fn has(&self, key: &str) -> bool {
        self.v.as_object().is_some_and(|o| o.contains_key(key))
    }

    /// The value as a string.
    pub fn str(&self) -> Result<&'a str> {
        self.v.as_str().ok_or_else(|| self.err(format!("expected a string, found {}", kind(self.v))))
    }

    /// The value as a non-negative integer.
    pub fn u64(&self) -> Result<u64> {
        self.v.as_u64().ok_or_else(|| self.err(format!("expected a non-negative integer, found {}", described(self.v))))
    }

    /// The value as an integer.
    pub fn i64(&self) -> Result<i64> {
        self.v.as_i64().ok_or_else(|| self.err(format!("expected an integer, found {}", described(self.v))))
    }

    /// The value as a `usize` index no larger than `limit`.
    pub fn index(&self, limit: usize) -> Result<usize> {
        let n = self.u64()?;
        if n >= limit as u64 {
            return Err(self.err(format!("{n} is out of range (must be below {limit})")));
        }
        Ok(n as usize)
    }

    /// The items of an array.
    pub fn array(&self) -> Result<Vec<J<'a>>> {
        let a = self.v.as_array().ok_or_else(|| self.err(format!("expected an array, found {}", kind(self.v))))?;
        Ok(a.iter().enumerate().map(|(i, v)| J { v, path: format!("{}[{i}]", self.path) }).collect())
    }

    /// The entries of an object, in document order.
    pub fn entries(&self) -> Result<Vec<(&'a str, J<'a>)>> {
        let o = self.v.as_object().ok_or_else(|| self.err(format!("expected an object, found {}", kind(self.v))))?;
        Ok(o.iter().map(|(k, v)| (k.as_str(), J { v, path: self.child_path(k) })).collect())
    }
}

/// A value for messages: a number with its value (`the number -3`, `the number 1e300`), else the
/// kind of value.
pub fn described(v: &Value) -> String {
    match v {
        Value::Number(n) => format!("the number {n}"),
        _ => kind(v).to_string(),
    }
}

/// A short name for the JSON type of a value, for messages.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
