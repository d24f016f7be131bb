//! Node bindings (napi-rs) for harnessweaver: the native addon behind the npm package.
//!
//! This crate only converts values between JavaScript and the core and turns
//! the core's errors into JavaScript `Error`s with `code` and `problems`; every
//! decision is made in the core. `index.js` wraps this addon.
//!
//! Values are converted with the plain N-API calls rather than napi-rs's serde
//! support, for three reasons: keys are defined as own data properties (a key
//! `__proto__` stays a key, never a prototype), the nesting limit is the
//! core's, and numbers follow the rule every binding shares (integral and
//! within ±2^53 → integer, otherwise a double; NaN and infinities refused;
//! BigInt through the core's host-integer rule: beyond ±2^53 refused; only
//! plain objects and arrays, never a Map, Date or class instance).

mod cel_lite;
mod gateway;
mod host;

use std::ffi::c_int;
use std::ptr;

use harnessweaver_core::host::canonical::{self, MAX_DEPTH, MAX_SAFE_INTEGER};
use harnessweaver_core::host::{self as core, Error as CoreError, ManifestSource, RefusalClass};
use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;
use serde_json::{json, Map, Value};

/// A value error raised while converting a JavaScript value.
fn value_error(code: &'static str, message: impl Into<String>) -> CoreError {
    CoreError::Value { code, message: message.into() }
}

/// A failed N-API call while converting (a bug or an exception thrown by a getter).
fn napi_failed(what: &str) -> CoreError {
    value_error("invalid_value", format!("could not read the value: {what}"))
}

fn check(status: sys::napi_status, what: &str) -> std::result::Result<(), CoreError> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi_failed(what))
    }
}

/// Converts a JavaScript value to the core's JSON value.
///
/// # Safety
/// `env` and `value` must be valid for the current call.
unsafe fn to_value(env: sys::napi_env, value: sys::napi_value, depth: usize) -> std::result::Result<Value, CoreError> {
    let mut ty = 0;
    check(unsafe { sys::napi_typeof(env, value, &mut ty) }, "typeof")?;
    match ty {
        sys::ValueType::napi_null => Ok(Value::Null),
        sys::ValueType::napi_boolean => {
            let mut b = false;
            check(unsafe { sys::napi_get_value_bool(env, value, &mut b) }, "boolean")?;
            Ok(Value::Bool(b))
        }
        sys::ValueType::napi_number => {
            let mut f = 0.0;
            check(unsafe { sys::napi_get_value_double(env, value, &mut f) }, "number")?;
            number(f)
        }
        sys::ValueType::napi_bigint => bigint(env, value),
        sys::ValueType::napi_string => Ok(Value::String(unsafe { string(env, value)? })),
        sys::ValueType::napi_object => {
            if depth >= MAX_DEPTH {
                return Err(value_error("nesting_too_deep", format!("value nests deeper than {MAX_DEPTH} levels")));
            }
            let mut is_array = false;
            check(unsafe { sys::napi_is_array(env, value, &mut is_array) }, "array")?;
            if is_array {
                unsafe { array(env, value, depth + 1) }
            } else if unsafe { is_plain_object(env, value)? } {
                unsafe { object(env, value, depth + 1) }
            } else {
                // A Map, Set, Date, typed array, class instance…: JSON.stringify would
                // silently turn most of them into `{}`; refusing is safer.
                Err(value_error(
                    "unsupported_type",
                    "only plain objects and arrays have a JSON form (not a Map, Set, Date, typed array or class instance)",
                ))
            }
        }
        sys::ValueType::napi_undefined => Err(value_error("unsupported_type", "`undefined` has no JSON form")),
        sys::ValueType::napi_function => Err(value_error("unsupported_type", "functions have no JSON form")),
        sys::ValueType::napi_symbol => Err(value_error("unsupported_type", "symbols have no JSON form")),
        _ => Err(value_error("unsupported_type", "this kind of value has no JSON form")),
    }
}

/// Whether `value` is a plain object: its prototype is `Object.prototype` or null.
unsafe fn is_plain_object(env: sys::napi_env, value: sys::napi_value) -> std::result::Result<bool, CoreError> {
    let mut proto = ptr::null_mut();
    check(unsafe { sys::napi_get_prototype(env, value, &mut proto) }, "prototype")?;
    let mut ty = 0;
    check(unsafe { sys::napi_typeof(env, proto, &mut ty) }, "prototype")?;
    if ty == sys::ValueType::napi_null {
        return Ok(true);
    }
    let mut plain = ptr::null_mut();
    check(unsafe { sys::napi_create_object(env, &mut plain) }, "object")?;
    let mut object_prototype = ptr::null_mut();
    check(unsafe { sys::napi_get_prototype(env, plain, &mut object_prototype) }, "prototype")?;
    let mut same = false;
    check(unsafe { sys::napi_strict_equals(env, proto, object_prototype, &mut same) }, "prototype")?;
    Ok(same)
}

/// JS numbers: integral and within ±2^53 → integer (so `1.0` and `1` agree, `-0` is `0`), else a double.
fn number(f: f64) -> std::result::Result<Value, CoreError> {
    if !f.is_finite() {
        return Err(value_error("non_finite_number", "NaN and infinities have no JSON form"));
    }
    #[expect(clippy::cast_precision_loss, reason = "2^53 is exact in f64")]
    let limit = MAX_SAFE_INTEGER as f64;
    if f.fract() == 0.0 && f.abs() <= limit {
        #[expect(clippy::cast_possible_truncation, reason = "integral and within ±2^53")]
        return Ok(Value::from(f as i64));
    }
    canonical::float_value(f)
}

/// BigInt: refused beyond ±2^53 by the core's host-integer rule, like Python's `int`.
fn bigint(env: sys::napi_env, value: sys::napi_value) -> std::result::Result<Value, CoreError> {
    let mut sign: c_int = 0;
    let mut count: usize = 2;
    let mut words = [0u64; 2];
    check(unsafe { sys::napi_get_value_bigint_words(env, value, &mut sign, &mut count, words.as_mut_ptr()) }, "bigint")?;
    let low = if count == 0 { 0 } else { words.first().copied().unwrap_or(0) };
    let high = if count > 1 { words.get(1).copied().unwrap_or(0) } else { 0 };
    if count > 2 || high >> 63 != 0 {
        // Far beyond any portable integer: the core words the refusal with its text.
        let mut text = ptr::null_mut();
        check(unsafe { sys::napi_coerce_to_string(env, value, &mut text) }, "bigint")?;
        return canonical::int_value_from_text(&unsafe { string(env, text)? });
    }
    let magnitude = (i128::from(high) << 64) | i128::from(low);
    canonical::int_value(if sign == 0 { magnitude } else { -magnitude })
}

unsafe fn string(env: sys::napi_env, value: sys::napi_value) -> std::result::Result<String, CoreError> {
    // Most keys and values are short: one N-API call into a stack buffer.
    // N-API never writes part of a character (at most 4 bytes in UTF-8) and
    // keeps one byte for the NUL, so fewer than 64 - 1 - 4 bytes written
    // means the whole string was; anything longer is read again in full.
    let mut small = [0u8; 64];
    let mut written = 0usize;
    check(unsafe { sys::napi_get_value_string_utf8(env, value, small.as_mut_ptr().cast(), small.len(), &mut written) }, "string")?;
    if written + 5 < small.len() {
        let bytes = small.get(..written).unwrap_or_default();
        return std::str::from_utf8(bytes).map(str::to_owned).map_err(|_| value_error("invalid_string", "string is not valid Unicode"));
    }
    let mut len = 0usize;
    check(unsafe { sys::napi_get_value_string_utf8(env, value, ptr::null_mut(), 0, &mut len) }, "string")?;
    let mut buf = vec![0u8; len + 1];
    let mut written = 0usize;
    check(unsafe { sys::napi_get_value_string_utf8(env, value, buf.as_mut_ptr().cast(), buf.len(), &mut written) }, "string")?;
    buf.truncate(written);
    // N-API hands out UTF-8 (lone surrogates become U+FFFD), so this does not fail.
    String::from_utf8(buf).map_err(|_| value_error("invalid_string", "string is not valid Unicode"))
}

unsafe fn array(env: sys::napi_env, value: sys::napi_value, depth: usize) -> std::result::Result<Value, CoreError> {
    let mut len = 0u32;
    check(unsafe { sys::napi_get_array_length(env, value, &mut len) }, "array length")?;
    let mut items = Vec::with_capacity(len as usize);
    for i in 0..len {
        let mut item = ptr::null_mut();
        check(unsafe { sys::napi_get_element(env, value, i, &mut item) }, "array element")?;
        items.push(unsafe { to_value(env, item, depth)? });
    }
    Ok(Value::Array(items))
}

unsafe fn object(env: sys::napi_env, value: sys::napi_value, depth: usize) -> std::result::Result<Value, CoreError> {
    // Own, enumerable, string keys only (what JSON.stringify sees); numeric keys as strings.
    let mut keys = ptr::null_mut();
    check(
        unsafe {
            sys::napi_get_all_property_names(
                env,
                value,
                sys::KeyCollectionMode::own_only,
                sys::KeyFilter::enumerable | sys::KeyFilter::skip_symbols,
                sys::KeyConversion::numbers_to_strings,
                &mut keys,
            )
        },
        "object keys",
    )?;
    let mut len = 0u32;
    check(unsafe { sys::napi_get_array_length(env, keys, &mut len) }, "object keys")?;
    let mut map = Map::new();
    for i in 0..len {
        let mut key = ptr::null_mut();
        check(unsafe { sys::napi_get_element(env, keys, i, &mut key) }, "object key")?;
        let mut item = ptr::null_mut();
        // [[Get]] of an own key: an own `__proto__` data property is read as itself.
        check(unsafe { sys::napi_get_property(env, value, key, &mut item) }, "object property")?;
        let key = unsafe { string(env, key)? };
        let item = unsafe { to_value(env, item, depth)? };
        map.insert(key, item);
    }
    Ok(Value::Object(map))
}

/// A core JSON value on its way to JavaScript.
pub struct Json(Value);

impl TypeName for Json {
    fn type_name() -> &'static str {
        "unknown"
    }

    fn value_type() -> ValueType {
        ValueType::Unknown
    }
}

impl ToNapiValue for Json {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        unsafe { to_js(env, &val.0) }
    }
}

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

/// Converts a core JSON value to JavaScript; keys become own data properties.
unsafe fn to_js(env: sys::napi_env, value: &Value) -> Result<sys::napi_value> {
    let mut out = ptr::null_mut();
    match value {
        Value::Null => napi_check(unsafe { sys::napi_get_null(env, &mut out) }, "null")?,
        Value::Bool(b) => napi_check(unsafe { sys::napi_get_boolean(env, *b, &mut out) }, "boolean")?,
        Value::Number(n) => {
            let f = n.as_f64().unwrap_or(0.0);
            napi_check(unsafe { sys::napi_create_double(env, f, &mut out) }, "number")?;
        }
        Value::String(s) => out = unsafe { js_string(env, s)? },
        Value::Array(items) => {
            napi_check(unsafe { sys::napi_create_array_with_length(env, items.len(), &mut out) }, "array")?;
            for (i, item) in items.iter().enumerate() {
                let item = unsafe { to_js(env, item)? };
                let i = u32::try_from(i).map_err(|_| Error::from_reason("array too long"))?;
                napi_check(unsafe { sys::napi_set_element(env, out, i, item) }, "array element")?;
            }
        }
        Value::Object(map) => {
            napi_check(unsafe { sys::napi_create_object(env, &mut out) }, "object")?;
            let mut props = Vec::with_capacity(map.len());
            for (k, v) in map {
                props.push(sys::napi_property_descriptor {
                    utf8name: ptr::null(),
                    name: unsafe { js_string(env, k)? },
                    method: None,
                    getter: None,
                    setter: None,
                    value: unsafe { to_js(env, v)? },
                    attributes: sys::PropertyAttributes::writable | sys::PropertyAttributes::enumerable | sys::PropertyAttributes::configurable,
                    data: ptr::null_mut(),
                });
            }
            if !props.is_empty() {
                napi_check(unsafe { sys::napi_define_properties(env, out, props.len(), props.as_ptr()) }, "object properties")?;
            }
        }
    }
    Ok(out)
}

/// Throws a JavaScript `Error` with `code`, `kind` and `problems` for a core error,
/// and returns the napi error that tells napi-rs the exception is already pending.
fn throw(env: &Env, err: &CoreError) -> Error {
    let raw = env.raw();
    let built = (|| -> Result<()> {
        let code = unsafe { js_string(raw, err.code())? };
        let message = unsafe { js_string(raw, &err.to_string())? };
        let mut js_err = ptr::null_mut();
        napi_check(unsafe { sys::napi_create_error(raw, code, message, &mut js_err) }, "error")?;
        let kind = match err {
            CoreError::Load(_) => "load",
            CoreError::Value { .. } => "value",
            CoreError::InvalidArgument { .. } => "invalid_argument",
            _ => "other",
        };
        // Every field present (null when unknown), the same shape in every language.
        let problems = Value::Array(
            err.problems()
                .iter()
                .map(|p| {
                    serde_json::json!({
                        "code": p.code, "message": p.message, "file": p.file,
                        "line": p.line, "column": p.column, "path": p.path,
                    })
                })
                .collect(),
        );
        let problems = unsafe { to_js(raw, &problems)? };
        let kind = unsafe { js_string(raw, kind)? };
        napi_check(unsafe { sys::napi_set_named_property(raw, js_err, c"problems".as_ptr(), problems) }, "problems")?;
        napi_check(unsafe { sys::napi_set_named_property(raw, js_err, c"kind".as_ptr(), kind) }, "kind")?;
        napi_check(unsafe { sys::napi_throw(raw, js_err) }, "throw")?;
        Ok(())
    })();
    match built {
        Ok(()) => Error::new(Status::PendingException, err.to_string()),
        Err(e) => e,
    }
}

fn convert(env: &Env, value: &Unknown<'_>) -> Result<Value> {
    unsafe { to_value(env.raw(), value.value().value, 0) }.map_err(|e| throw(env, &e))
}

/// The core's tables the JavaScript side is built from: the refusal classes
/// (`RefusalClass::ALL`, base first), the manifest risks and side effects
/// (for `add tool`) and the variable names cel-lite expressions may use.
#[napi(
    ts_return_type = "{ refusalClasses: Array<{ name: string, parent: string | null, step: string | null, doc: string, extras: string[] }>, risks: string[], sideEffects: string[], celNames: string[] }"
)]
pub fn tables() -> Json {
    let classes: Vec<Value> = RefusalClass::ALL
        .iter()
        .map(|c| {
            let extras: Vec<&str> = c.extras().iter().map(|x| x.as_str()).collect();
            json!({"name": c.name(), "parent": c.parent().map(RefusalClass::name), "step": c.step(), "doc": c.doc(), "extras": extras})
        })
        .collect();
    Json(json!({"refusalClasses": classes, "risks": core::RISKS, "sideEffects": core::SIDE_EFFECTS, "celNames": core::cel::VAR_NAMES}))
}

/// The definition digest (`sha256:…`) of a tool's name, description and input schema.
#[napi(ts_args_type = "name: string, description: string, inputSchema: unknown")]
pub fn definition_digest(env: Env, name: String, description: String, input_schema: Unknown<'_>) -> Result<String> {
    let schema = convert(&env, &input_schema)?;
    core::definition_digest(&name, &description, &schema).map_err(|e| throw(&env, &e))
}

/// A value from `JSON.stringify` text (which `index.js` sends only for values
/// it says exactly), every number read as the JavaScript number it prints, so
/// by [`number`] as the walk reads it (`1152921504606846976` is 2^60 as a
/// double, not an integer beyond ±2^53). `None` when serde_json cannot read
/// the text (a lone surrogate, which N-API reads as U+FFFD; nesting beyond
/// its limit): the caller walks the value instead, with the walk's result.
fn from_json_text(text: &str) -> Option<std::result::Result<Value, CoreError>> {
    fn js_numbers(value: &mut Value) -> std::result::Result<(), CoreError> {
        match value {
            Value::Number(n) => {
                *value = number(n.as_f64().unwrap_or(f64::NAN))?;
                Ok(())
            }
            Value::Array(items) => items.iter_mut().try_for_each(js_numbers),
            Value::Object(map) => map.values_mut().try_for_each(js_numbers),
            Value::Null | Value::Bool(_) | Value::String(_) => Ok(()),
        }
    }
    let mut value: Value = serde_json::from_str(text).ok()?;
    Some(js_numbers(&mut value).map(|()| value))
}

/// [`definition_digest`] of a schema given as its `JSON.stringify` text; null
/// when the text cannot be read exactly (`index.js` then walks the value).
#[napi]
pub fn definition_digest_text(env: Env, name: String, description: String, input_schema: String) -> Result<Option<String>> {
    let Some(schema) = from_json_text(&input_schema) else { return Ok(None) };
    let schema = schema.map_err(|e| throw(&env, &e))?;
    harnessweaver_core::host::definition_digest(&name, &description, &schema).map(Some).map_err(|e| throw(&env, &e))
}

/// [`canonical_json`] of a value given as its `JSON.stringify` text; null as
/// for [`definition_digest_text`].
#[napi]
pub fn canonical_json_text(env: Env, text: String) -> Result<Option<String>> {
    let Some(value) = from_json_text(&text) else { return Ok(None) };
    let value = value.map_err(|e| throw(&env, &e))?;
    harnessweaver_core::host::canonical::to_string(&value).map(Some).map_err(|e| throw(&env, &e))
}

/// The canonical JSON text of a value.
#[napi(ts_args_type = "value: unknown")]
pub fn canonical_json(env: Env, value: Unknown<'_>) -> Result<String> {
    let value = convert(&env, &value)?;
    core::canonical::to_string(&value).map_err(|e| throw(&env, &e))
}

/// Parses one manifest (an object, or YAML/JSON text) and returns its description.
#[napi(ts_args_type = "manifest: unknown, origin?: string", ts_return_type = "Record<string, unknown>")]
pub fn describe_manifest(env: Env, manifest: Unknown<'_>, origin: Option<String>) -> Result<Json> {
    let origin = origin.unwrap_or_else(|| ManifestSource::DEFAULT_ORIGIN.into());
    let source = match convert(&env, &manifest)? {
        Value::String(text) => ManifestSource::Text { text, origin },
        value => ManifestSource::Value { value, origin },
    };
    core::describe_manifest(&source).map(Json).map_err(|e| throw(&env, &CoreError::Load(e.problems)))
}

/// Runs the named sanitizers, in order, on every string value and object key;
/// returns `{ value, counts }` (replacements per kind, never what was replaced).
#[napi(ts_args_type = "value: unknown, sanitizers: string[]", ts_return_type = "{ value: unknown; counts: Record<string, number> }")]
pub fn sanitize(env: Env, value: Unknown<'_>, sanitizers: Vec<String>) -> Result<Json> {
    let value = convert(&env, &value)?;
    let (value, counts) = core::sanitize(&value, &sanitizers).map_err(|e| throw(&env, &e))?;
    Ok(Json(json!({"value": value, "counts": counts})))
}

/// Runs the `harnessweaver` command line with `args` (without the program name); returns the exit code.
#[napi]
pub fn cli_run(args: Vec<String>) -> i32 {
    harnessweaver_runtime::cli::run(&args)
}
