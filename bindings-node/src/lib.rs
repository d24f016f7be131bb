//! Node bindings (napi-rs) for harnessweaver: the native addon behind the npm package.
//!
//! Values cross as JSON text, both ways: `index.js` writes a value's text
//! (`JSON.stringify` when that says exactly what the value is, else a walk of
//! its own, the core wording what has no JSON form) and parses what comes
//! back; the addon reads text with the core's `host::value_of_text`. Every
//! decision is the core's; its errors become JavaScript `Error`s with `code`,
//! `kind` and `problems` (JSON text), which `index.js` maps to its classes.

mod cel_lite;
mod gateway;
mod host;

use std::ptr;

use harnessweaver_core::host::{self as core, canonical, Error as CoreError};
use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;
use serde_json::Value;

fn napi_check(status: sys::napi_status, what: &str) -> Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(Error::new(Status::GenericFailure, format!("could not build the result: {what}")))
    }
}

unsafe fn js_string(env: sys::napi_env, s: &str) -> Result<sys::napi_value> {
    let mut out = ptr::null_mut();
    let len = isize::try_from(s.len()).map_err(|_| Error::from_reason("string too long"))?;
    napi_check(unsafe { sys::napi_create_string_utf8(env, s.as_ptr().cast(), len, &mut out) }, "string")?;
    Ok(out)
}

/// Throws a JavaScript `Error` with `code`, `kind` and `problems` for a core error,
/// and returns the napi error that tells napi-rs the exception is already pending.
fn throw(env: &Env, err: &CoreError) -> Error {
    let raw = env.raw();
    let built = || -> Result<()> {
        let (code, message, mut js_err) = unsafe { (js_string(raw, err.code())?, js_string(raw, &err.to_string())?, ptr::null_mut()) };
        napi_check(unsafe { sys::napi_create_error(raw, code, message, &mut js_err) }, "error")?;
        let (problems, kind) = unsafe { (js_string(raw, &err.problems_value().to_string())?, js_string(raw, err.kind())?) };
        napi_check(unsafe { sys::napi_set_named_property(raw, js_err, c"problems".as_ptr(), problems) }, "problems")?;
        napi_check(unsafe { sys::napi_set_named_property(raw, js_err, c"kind".as_ptr(), kind) }, "kind")?;
        napi_check(unsafe { sys::napi_throw(raw, js_err) }, "throw")
    };
    match built() {
        Ok(()) => Error::new(Status::PendingException, err.to_string()),
        Err(e) => e,
    }
}

/// The value of JSON text `index.js` wrote.
fn value(env: &Env, text: &str) -> Result<Value> {
    core::value_of_text(text).map_err(|e| throw(env, &e))
}

/// A core answer as JSON text.
fn answer(env: &Env, answer: std::result::Result<Value, CoreError>) -> Result<String> {
    answer.map(|v| v.to_string()).map_err(|e| throw(env, &e))
}

/// A core host method that needs no harness (`harnessweaver_core::host::request`):
/// `tables`, `describe_manifest`, `sanitize`, `value_error`; `args` and the answer are JSON text.
#[napi]
pub fn request(env: Env, method: String, args: String) -> Result<String> {
    answer(&env, core::request(&method, &value(&env, &args)?))
}

/// The definition digest (`sha256:…`) of a tool's name, description, input schema and output schema, if any (JSON text).
#[napi]
pub fn definition_digest(env: Env, name: String, description: String, input_schema: String, output_schema: Option<String>) -> Result<String> {
    if let Some(output) = output_schema {
        let (input, output) = (value(&env, &input_schema)?, value(&env, &output)?);
        return core::tool_definition_digest(&name, &description, &input, Some(&output)).map_err(|e| throw(&env, &e));
    }
    if let Some(schema) = canonical::of_double_json(&input_schema) {
        return Ok(core::definition_digest_canonical(&name, &description, &schema));
    }
    core::definition_digest(&name, &description, &value(&env, &input_schema)?).map_err(|e| throw(&env, &e))
}

/// The canonical JSON text of a value (its JSON text).
#[napi]
pub fn canonical_json(env: Env, text: String) -> Result<String> {
    match canonical::of_double_json(&text) {
        Some(canonical) => Ok(canonical),
        None => canonical::to_string(&value(&env, &text)?).map_err(|e| throw(&env, &e)),
    }
}

/// Runs the `harnessweaver` command line with `args` (without the program name); returns the exit code.
#[napi]
pub fn cli_run(args: Vec<String>) -> i32 {
    harnessweaver_runtime::cli::run(&args)
}
