//! Node bindings (napi-rs) for harnessweaver: the native addon behind the npm package.
//!
//! This crate only converts values between JavaScript and the core and turns
//! the core's errors into JavaScript `Error`s; every decision is made in the
//! core. Values are converted with plain N-API calls rather than napi-rs's
//! serde support: keys are own data properties (a key `__proto__` stays a
//! key), the nesting limit is the core's, numbers follow
//! `canonical::double_value`, a BigInt the core's host-integer rule, and only
//! plain objects and arrays have a JSON form (never a Map, Date or class instance).

mod cel_lite;
mod gateway;
mod host;

use std::ffi::c_int;
use std::ptr;

use harnessweaver_core::host::canonical::{self, MAX_DEPTH};
use harnessweaver_core::host::{self as core, Error as CoreError};
use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;
use serde_json::{Map, Value};

fn value_error(code: &'static str, message: impl Into<String>) -> CoreError {
    CoreError::value(code, message)
}

/// A failed N-API call while converting (a bug, or an exception thrown by a getter).
fn check(status: sys::napi_status, what: &str) -> std::result::Result<(), CoreError> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(value_error("invalid_value", format!("could not read the value: {what}")))
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
            canonical::double_value(f)
        }
        sys::ValueType::napi_bigint => unsafe { bigint(env, value) },
        sys::ValueType::napi_string => Ok(Value::String(unsafe { string(env, value)? })),
        sys::ValueType::napi_object if depth >= MAX_DEPTH => {
            Err(value_error("nesting_too_deep", format!("value nests deeper than {MAX_DEPTH} levels")))
        }
        sys::ValueType::napi_object => {
            let mut is_array = false;
            check(unsafe { sys::napi_is_array(env, value, &mut is_array) }, "array")?;
            if is_array {
                unsafe { array(env, value, depth + 1) }
            } else if unsafe { is_plain_object(env, value)? } {
                unsafe { object(env, value, depth + 1) }
            } else {
                // JSON.stringify would silently turn most of these into `{}`; refusing is safer.
                let message = "only plain objects and arrays have a JSON form (not a Map, Set, Date, typed array or class instance)";
                Err(value_error("unsupported_type", message))
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
    let (mut proto, mut ty, mut same) = (ptr::null_mut(), 0, false);
    check(unsafe { sys::napi_get_prototype(env, value, &mut proto) }, "prototype")?;
    check(unsafe { sys::napi_strict_equals(env, proto, object_prototype(env)?, &mut same) }, "prototype")?;
    if !same {
        check(unsafe { sys::napi_typeof(env, proto, &mut ty) }, "prototype")?;
    }
    Ok(same || ty == sys::ValueType::napi_null)
}

thread_local! {
    /// This thread's environment and its `Object.prototype`, read once (every object converted is checked against it).
    static OBJECT_PROTOTYPE: std::cell::Cell<(sys::napi_env, sys::napi_ref)> = const { std::cell::Cell::new((ptr::null_mut(), ptr::null_mut())) };
}

unsafe fn object_prototype(env: sys::napi_env) -> std::result::Result<sys::napi_value, CoreError> {
    let (mut out, mut plain, (cached_env, mut cached)) = (ptr::null_mut(), ptr::null_mut(), OBJECT_PROTOTYPE.get());
    if cached_env != env {
        check(unsafe { sys::napi_create_object(env, &mut plain) }, "object")?;
        check(unsafe { sys::napi_get_prototype(env, plain, &mut out) }, "prototype")?;
        check(unsafe { sys::napi_create_reference(env, out, 1, &mut cached) }, "prototype")?;
        OBJECT_PROTOTYPE.set((env, cached));
        return Ok(out);
    }
    check(unsafe { sys::napi_get_reference_value(env, cached, &mut out) }, "prototype")?;
    Ok(out)
}

/// A BigInt, by the core's host-integer rule (refused beyond ±2^53, like Python's `int`).
unsafe fn bigint(env: sys::napi_env, value: sys::napi_value) -> std::result::Result<Value, CoreError> {
    let (mut sign, mut count, mut words): (c_int, usize, [u64; 2]) = (0, 2, [0; 2]);
    check(unsafe { sys::napi_get_value_bigint_words(env, value, &mut sign, &mut count, words.as_mut_ptr()) }, "bigint")?;
    let [low, high] = words;
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
    // Most strings are short: one N-API call into a stack buffer. N-API never
    // writes part of a character (at most 4 bytes) and keeps a byte for the
    // NUL, so fewer than 64 - 5 bytes written means the whole string was.
    let mut small = [0u8; 64];
    let mut written = 0usize;
    check(unsafe { sys::napi_get_value_string_utf8(env, value, small.as_mut_ptr().cast(), small.len(), &mut written) }, "string")?;
    let bytes = if written + 5 < small.len() {
        small.get(..written).unwrap_or_default().to_vec()
    } else {
        // Its length in UTF-16 units costs nothing; each unit is at most 3 bytes of UTF-8.
        let mut units = 0usize;
        check(unsafe { sys::napi_get_value_string_utf16(env, value, ptr::null_mut(), 0, &mut units) }, "string")?;
        let mut buf = vec![0u8; units * 3 + 1];
        check(unsafe { sys::napi_get_value_string_utf8(env, value, buf.as_mut_ptr().cast(), buf.len(), &mut written) }, "string")?;
        buf.truncate(written);
        buf
    };
    // N-API hands out UTF-8 (lone surrogates become U+FFFD), so this does not fail.
    String::from_utf8(bytes).map_err(|_| value_error("invalid_string", "string is not valid Unicode"))
}

unsafe fn array(env: sys::napi_env, value: sys::napi_value, depth: usize) -> std::result::Result<Value, CoreError> {
    let mut len = 0u32;
    check(unsafe { sys::napi_get_array_length(env, value, &mut len) }, "array length")?;
    let mut items = Vec::with_capacity(len as usize);
    for i in 0..len {
        let mut item = ptr::null_mut();
        check(unsafe { sys::napi_get_element(env, value, i, &mut item) }, "array element")?;
        // A failure names where it is (a JSON pointer), never the value.
        items.push(unsafe { to_value(env, item, depth) }.map_err(|e| e.at_index(i as usize))?);
    }
    Ok(Value::Array(items))
}

unsafe fn object(env: sys::napi_env, value: sys::napi_value, depth: usize) -> std::result::Result<Value, CoreError> {
    // Own, enumerable, string keys only (what JSON.stringify sees); numeric keys as strings.
    let (mut keys, mut len) = (ptr::null_mut(), 0u32);
    let filter = sys::KeyFilter::enumerable | sys::KeyFilter::skip_symbols;
    let (own, numbers) = (sys::KeyCollectionMode::own_only, sys::KeyConversion::numbers_to_strings);
    check(unsafe { sys::napi_get_all_property_names(env, value, own, filter, numbers, &mut keys) }, "object keys")?;
    check(unsafe { sys::napi_get_array_length(env, keys, &mut len) }, "object keys")?;
    let mut map = Map::new();
    for i in 0..len {
        let (mut key, mut item) = (ptr::null_mut(), ptr::null_mut());
        check(unsafe { sys::napi_get_element(env, keys, i, &mut key) }, "object key")?;
        // [[Get]] of an own key: an own `__proto__` data property is read as itself.
        check(unsafe { sys::napi_get_property(env, value, key, &mut item) }, "object property")?;
        let key = unsafe { string(env, key)? };
        let item = unsafe { to_value(env, item, depth) }.map_err(|e| e.at_key(&key))?;
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
        Value::Number(n) => napi_check(unsafe { sys::napi_create_double(env, n.as_f64().unwrap_or(0.0), &mut out) }, "number")?,
        Value::String(s) => out = unsafe { js_string(env, s)? },
        Value::Array(items) => {
            napi_check(unsafe { sys::napi_create_array_with_length(env, items.len(), &mut out) }, "array")?;
            for (i, item) in (0u32..).zip(items) {
                napi_check(unsafe { sys::napi_set_element(env, out, i, to_js(env, item)?) }, "array element")?;
            }
        }
        Value::Object(map) => {
            napi_check(unsafe { sys::napi_create_object(env, &mut out) }, "object")?;
            let attributes = sys::PropertyAttributes::writable | sys::PropertyAttributes::enumerable | sys::PropertyAttributes::configurable;
            let property = |(k, v): (&String, &Value)| -> Result<sys::napi_property_descriptor> {
                let (name, value) = unsafe { (js_string(env, k)?, to_js(env, v)?) };
                Ok(sys::napi_property_descriptor {
                    utf8name: ptr::null(),
                    name,
                    method: None,
                    getter: None,
                    setter: None,
                    value,
                    attributes,
                    data: ptr::null_mut(),
                })
            };
            let props = map.iter().map(property).collect::<Result<Vec<_>>>()?;
            napi_check(unsafe { sys::napi_define_properties(env, out, props.len(), props.as_ptr()) }, "object properties")?;
        }
    }
    Ok(out)
}

/// Throws a JavaScript `Error` with `code`, `kind` and `problems` for a core error,
/// and returns the napi error that tells napi-rs the exception is already pending.
fn throw(env: &Env, err: &CoreError) -> Error {
    let raw = env.raw();
    let built = || -> Result<()> {
        let (code, message, mut js_err) = unsafe { (js_string(raw, err.code())?, js_string(raw, &err.to_string())?, ptr::null_mut()) };
        napi_check(unsafe { sys::napi_create_error(raw, code, message, &mut js_err) }, "error")?;
        let (problems, kind) = unsafe { (to_js(raw, &err.problems_value())?, js_string(raw, err.kind())?) };
        napi_check(unsafe { sys::napi_set_named_property(raw, js_err, c"problems".as_ptr(), problems) }, "problems")?;
        napi_check(unsafe { sys::napi_set_named_property(raw, js_err, c"kind".as_ptr(), kind) }, "kind")?;
        napi_check(unsafe { sys::napi_throw(raw, js_err) }, "throw")
    };
    match built() {
        Ok(()) => Error::new(Status::PendingException, err.to_string()),
        Err(e) => e,
    }
}

fn convert(env: &Env, value: &Unknown<'_>) -> Result<Value> {
    unsafe { to_value(env.raw(), value.raw(), 0) }.map_err(|e| throw(env, &e))
}

/// A core host method that needs no harness (`harnessweaver_core::host::request`):
/// `tables`, `describe_manifest`, `sanitize`.
#[napi(ts_args_type = "method: string, args: Record<string, unknown>", ts_return_type = "any")]
pub fn request(env: Env, method: String, args: Unknown<'_>) -> Result<Json> {
    core::request(&method, &convert(&env, &args)?).map(Json).map_err(|e| throw(&env, &e))
}

/// The definition digest (`sha256:…`) of a tool's name, description and
/// input schema; `text` is the schema's `JSON.stringify` text, which
/// `index.js` sends only when it is exact (the schema is walked when the core
/// cannot read the text).
#[napi(ts_args_type = "name: string, description: string, inputSchema: unknown, text?: string | null")]
pub fn definition_digest(env: Env, name: String, description: String, input_schema: Unknown<'_>, text: Option<String>) -> Result<String> {
    if let Some(schema) = text.as_deref().and_then(canonical::of_double_json) {
        return Ok(core::definition_digest_canonical(&name, &description, &schema));
    }
    core::definition_digest(&name, &description, &convert(&env, &input_schema)?).map_err(|e| throw(&env, &e))
}

/// The canonical JSON text of a value (`text`: its `JSON.stringify` text, as for `definitionDigest`).
#[napi(ts_args_type = "value: unknown, text?: string | null")]
pub fn canonical_json(env: Env, value: Unknown<'_>, text: Option<String>) -> Result<String> {
    if let Some(canonical) = text.as_deref().and_then(canonical::of_double_json) {
        return Ok(canonical);
    }
    canonical::to_string(&convert(&env, &value)?).map_err(|e| throw(&env, &e))
}

/// Runs the `harnessweaver` command line with `args` (without the program name); returns the exit code.
#[napi]
pub fn cli_run(args: Vec<String>) -> i32 {
    harnessweaver_runtime::cli::run(&args)
}
