//! `sanitize` (native side): the output sanitizers on any JSON-like value.
//! Conversion only; the sanitizing is the core's (`harnessweaver_core::sanitize`).

use harnessweaver_core::sanitize::{self as core_sanitize, Sanitizer};
use harnessweaver_core::Error as CoreError;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde_json::{Map, Value};

use crate::{convert, throw, Json};

/// Runs the named sanitizers, in order, on every string value and object key;
/// returns `{ value, counts }` (replacements per kind, never what was replaced).
#[napi(ts_args_type = "value: unknown, sanitizers: string[]", ts_return_type = "{ value: unknown; counts: Record<string, number> }")]
pub fn sanitize(env: Env, value: Unknown<'_>, sanitizers: Vec<String>) -> Result<Json> {
    let mut chosen = Vec::with_capacity(sanitizers.len());
    for name in &sanitizers {
        let s = Sanitizer::from_name(name).ok_or_else(|| {
            throw(&env, &CoreError::InvalidArgument {
                code: "unknown_sanitizer",
                message: format!("unknown sanitizer `{name}` (expected pii_redact or strip_instructions)"),
            })
        })?;
        chosen.push(s);
    }
    let value = convert(&env, &value)?;
    let (out, report) = core_sanitize::apply(&value, &chosen);
    let counts: Map<String, Value> = report.counts.iter().map(|(k, n)| (k.to_string(), Value::from(n))).collect();
    let mut result = Map::new();
    result.insert("value".into(), out);
    result.insert("counts".into(), Value::Object(counts));
    Ok(Json(Value::Object(result)))
}
