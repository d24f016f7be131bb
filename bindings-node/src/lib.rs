//! Node bindings (napi-rs) for harnessweaver: the native addon behind the npm package.
//!
//! Conversion only. [`from_js`] reads a JavaScript value by the core's rules
//! (plain objects and arrays, numbers as doubles, BigInts within ±2^53, the
//! core's error at its path for anything with no JSON form); [`to_js`] writes
//! one back. Errors are thrown as `index.js`'s classes (given to `init`),
//! picked by the core's tables, so a new code needs no JavaScript.

mod cel_lite;
mod gateway;
mod host;

use std::cell::Cell;
use std::ffi::{CStr, CString};
use std::ptr;

use harnessweaver_core::host::{self as core, canonical, value_error, Error as CoreError, ERROR_CLASSES};
use napi::bindgen_prelude::*;
use napi::sys;
use napi::sys::napi_property_descriptor as Property;
use napi_derive::napi;
use serde_json::{Map, Value};

type Raw = sys::napi_value;

/// The addon's allocator: conversions and calls allocate many small values, which mimalloc serves faster than glibc.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

thread_local! {
    /// `index.js`'s classes by name (`init`).
    pub(crate) static CLASSES: Cell<sys::napi_ref> = const { Cell::new(ptr::null_mut()) };
    static OBJECT_KEYS: Cell<sys::napi_ref> = const { Cell::new(ptr::null_mut()) };
    /// `index.js`'s `invoke(handler, args, idempotencyKey, tool, progress, secrets)` and `noProgress` (`init`).
    pub(crate) static INVOKE: Cell<sys::napi_ref> = const { Cell::new(ptr::null_mut()) };
    pub(crate) static NO_PROGRESS: Cell<sys::napi_ref> = const { Cell::new(ptr::null_mut()) };
}

/// JavaScript's `typeof` of each N-API value type (an external is an object).
const TYPE_NAMES: [&str; 10] = ["undefined", "object", "boolean", "number", "string", "symbol", "object", "function", "object", "bigint"];

fn ok(status: sys::napi_status) -> Result<()> {
    match status {
        sys::Status::napi_ok => Ok(()),
        sys::Status::napi_pending_exception => Err(Error::new(Status::PendingException, "a JavaScript exception")),
        other => Err(Error::from_reason(format!("N-API call failed ({other})"))),
    }
}

/// Makes an N-API call that writes one value.
macro_rules! out {
    ($f:ident($($a:expr),*)) => {{
        let mut out = Default::default();
        $crate::ok(unsafe { sys::$f($($a,)* &mut out) }).map(|()| out)
    }};
}
pub(crate) use out;

/// The N-API calls the conversions make, on one environment.
#[derive(Clone, Copy)]
pub(crate) struct Js(pub(crate) sys::napi_env);

impl Js {
    pub(crate) fn string(self, s: &str) -> Result<Raw> {
        out!(napi_create_string_utf8(self.0, s.as_ptr().cast(), s.len().cast_signed()))
    }
    /// A string's text: in one N-API call when it fits 63 UTF-16 units (V8 copies those faster than it
    /// encodes UTF-8); a lone surrogate becomes U+FFFD, as N-API's UTF-8 makes it.
    pub(crate) fn text(self, v: Raw) -> Result<String> {
        let mut buffer = [0u16; 64];
        let written = out!(napi_get_value_string_utf16(self.0, v, buffer.as_mut_ptr(), buffer.len()))?;
        match buffer.get(..written).filter(|_| written + 1 < buffer.len()) {
            Some(units) => Ok(String::from_utf16_lossy(units)),
            None => unsafe { String::from_napi_value(self.0, v) },
        }
    }
    pub(crate) fn type_of(self, v: Raw) -> sys::napi_valuetype {
        out!(napi_typeof(self.0, v)).unwrap_or(sys::ValueType::napi_undefined)
    }
    pub(crate) fn get(self, object: Raw, key: &CStr) -> Result<Raw> {
        out!(napi_get_named_property(self.0, object, key.as_ptr()))
    }
    pub(crate) fn set(self, object: Raw, key: &CStr, value: Raw) -> Result<()> {
        ok(unsafe { sys::napi_set_named_property(self.0, object, key.as_ptr(), value) })
    }
    /// The `Object.keys` function (kept from its first use).
    fn object_keys(self) -> Result<Raw> {
        if OBJECT_KEYS.get().is_null() {
            let keys = self.get(self.get(out!(napi_get_global(self.0))?, c"Object")?, c"keys")?;
            OBJECT_KEYS.set(out!(napi_create_reference(self.0, keys, 1))?);
        }
        out!(napi_get_reference_value(self.0, OBJECT_KEYS.get()))
    }
    /// `new classes[name](...args)`, a class of `index.js`.
    pub(crate) fn new_of(self, name: &str, args: &[Raw]) -> Result<Raw> {
        let name = CString::new(name).map_err(|e| Error::from_reason(e.to_string()))?;
        let class = self.get(out!(napi_get_reference_value(self.0, CLASSES.get()))?, &name)?;
        out!(napi_new_instance(self.0, class, args.len(), args.as_ptr()))
    }
    /// Calls `f`: its value, or `Err` with what it threw.
    pub(crate) fn call(self, f: Raw, args: &[Raw]) -> Result<std::result::Result<Raw, Raw>> {
        let this = out!(napi_get_undefined(self.0))?;
        match out!(napi_call_function(self.0, this, f, args.len(), args.as_ptr())) {
            Ok(v) => Ok(Ok(v)),
            Err(e) if e.status == Status::PendingException => Ok(Err(out!(napi_get_and_clear_last_exception(self.0))?)),
            Err(e) => Err(e),
        }
    }
    /// What a thrown value is called: an object's `name` when it is a non-empty string, else its type.
    pub(crate) fn kind_of(self, thrown: Raw) -> String {
        let ty = self.type_of(thrown);
        let name = (ty == sys::ValueType::napi_object).then(|| self.get(thrown, c"name")).and_then(|n| match n {
            Ok(n) if self.type_of(n) == sys::ValueType::napi_string => self.text(n).ok().filter(|n| !n.is_empty()),
            Ok(_) => None,
            Err(_) => out!(napi_get_and_clear_last_exception(self.0)).ok().and(None),
        });
        name.unwrap_or_else(|| TYPE_NAMES.get(ty.cast_unsigned() as usize).copied().unwrap_or("object").to_string())
    }
    /// `new classes[class](message, code, problems)` with the `extra` properties, as the error for napi-rs to throw.
    pub(crate) fn error(self, class: &str, message: &str, code: &str, problems: &Value, extra: &[(&CStr, Value)]) -> Error {
        let made = (|| {
            let error = self.new_of(class, &[self.string(message)?, self.string(code)?, to_js(self, problems)?])?;
            extra.iter().try_for_each(|(key, value)| self.set(error, key, to_js(self, value)?))?;
            Ok(Error::from_unknown_without_coercion(self.unknown(error)))
        })();
        made.unwrap_or_else(|e| e)
    }
    /// The error to return for a core error: `index.js`'s class for its kind (or the exception
    /// JavaScript threw while a value was read, left pending).
    pub(crate) fn raise(self, err: &CoreError) -> Error {
        if out!(napi_is_exception_pending(self.0)).unwrap_or(false) {
            return Error::new(Status::PendingException, err.to_string());
        }
        let class = ERROR_CLASSES.iter().find(|c| c[0] == err.kind()).map_or("HarnessweaverError", |c| c[1]);
        self.error(class, &err.to_string(), err.code(), &err.problems_value(), &[])
    }
    pub(crate) fn unknown<'e>(self, v: Raw) -> Unknown<'e> {
        unsafe { Unknown::from_raw_unchecked(self.0, v) }
    }
    /// The value a reference made by `init` holds.
    pub(crate) fn kept(self, r: &'static std::thread::LocalKey<Cell<sys::napi_ref>>) -> Result<Raw> {
        out!(napi_get_reference_value(self.0, r.get()))
    }
}

/// A Rust value a JavaScript external holds (a result, a ticket, a compiled program), tagged with its
/// type: cheaper than napi-rs's `External`, which registers each one in a global map.
pub(crate) trait Held: Sized + 'static {
    const TAG: sys::napi_type_tag;
}

/// `value` in a new external, dropped when JavaScript collects it.
pub(crate) fn hold<T: Held>(js: Js, value: T) -> Result<Raw> {
    let data = Box::into_raw(Box::new(value));
    let external = out!(napi_create_external(js.0, data.cast(), Some(release::<T>), ptr::null_mut()))
        // Not handed to N-API: freed here.
        .inspect_err(|_| drop(unsafe { Box::from_raw(data) }))?;
    ok(unsafe { sys::napi_type_tag_object(js.0, external, &T::TAG) })?;
    Ok(external)
}

pub(crate) unsafe extern "C" fn release<T>(_env: sys::napi_env, data: *mut std::ffi::c_void, _hint: *mut std::ffi::c_void) {
    // Made by `Box::into_raw` (in `hold`, `cel_lite_compile`); N-API finalizes once.
    drop(unsafe { Box::from_raw(data.cast::<T>()) });
}

/// The value an external made by `hold::<T>` holds (alive while `v` is).
pub(crate) fn held<'v, T: Held>(js: Js, v: Raw) -> Result<&'v T> {
    let tagged = js.type_of(v) == sys::ValueType::napi_external && out!(napi_check_object_type_tag(js.0, v, &T::TAG))?;
    if !tagged {
        return Err(Error::new(Status::InvalidArg, "not a value this addon made"));
    }
    let data = out!(napi_get_value_external(js.0, v))?;
    Ok(unsafe { &*data.cast::<T>() })
}

/// An N-API failure while a value is read (a getter threw: its exception stays pending).
fn io(e: Error) -> CoreError {
    CoreError::Io { message: e.reason }
}

/// `v` as the core's JSON value, `depth` levels below the top of what it belongs to.
pub(crate) fn from_js(js: Js, v: Raw, depth: usize) -> std::result::Result<Value, CoreError> {
    let env = js.0;
    let ty = js.type_of(v);
    Ok(match ty {
        sys::ValueType::napi_string => Value::String(js.text(v).map_err(io)?),
        sys::ValueType::napi_number => canonical::double_value(out!(napi_get_value_double(env, v)).map_err(io)?)?,
        sys::ValueType::napi_boolean => Value::Bool(out!(napi_get_value_bool(env, v)).map_err(io)?),
        sys::ValueType::napi_null => Value::Null,
        sys::ValueType::napi_bigint => canonical::int_value_from_text(&js.text(out!(napi_coerce_to_string(env, v)).map_err(io)?).map_err(io)?)?,
        sys::ValueType::napi_object if depth >= canonical::MAX_DEPTH => return Err(value_error("deep", "", &[])),
        sys::ValueType::napi_object if out!(napi_is_array(env, v)).map_err(io)? => {
            let len = out!(napi_get_array_length(env, v)).map_err(io)?;
            let mut items = Vec::with_capacity(len as usize);
            for i in 0..len {
                let item = out!(napi_get_element(env, v, i)).map_err(io)?;
                items.push(from_js(js, item, depth + 1).map_err(|e| e.at_index(i as usize))?);
            }
            Value::Array(items)
        }
        sys::ValueType::napi_object => {
            // Plain: made by `{}` or `Object.create(null)`, its prototype `Object.prototype` (of any realm) or none.
            let proto = out!(napi_get_prototype(env, v)).map_err(io)?;
            if js.type_of(proto) != sys::ValueType::napi_null
                && js.type_of(out!(napi_get_prototype(env, proto)).map_err(io)?) != sys::ValueType::napi_null
            {
                return Err(value_error("object", "", &[]));
            }
            // Its own enumerable string keys: `Object.keys`, a JavaScript call cheaper than
            // `napi_get_all_property_names`, which deep down (where V8 sees its stack run low) reads them instead.
            let (own, filter) = (sys::KeyCollectionMode::own_only, sys::KeyFilter::enumerable | sys::KeyFilter::skip_symbols);
            let keys = if depth < 64 {
                js.call(js.object_keys().map_err(io)?, &[v]).map_err(io)?.map_err(|_| io(Error::from_reason("Object.keys")))?
            } else {
                out!(napi_get_all_property_names(env, v, own, filter, sys::KeyConversion::numbers_to_strings)).map_err(io)?
            };
            let mut map = Map::new();
            for i in 0..out!(napi_get_array_length(env, keys)).map_err(io)? {
                let key = out!(napi_get_element(env, keys, i)).map_err(io)?;
                let (name, item) = (js.text(key).map_err(io)?, out!(napi_get_property(env, v, key)).map_err(io)?);
                let item = from_js(js, item, depth + 1).map_err(|e| e.at_key(&name))?;
                map.insert(name, item);
            }
            Value::Object(map)
        }
        other => return Err(value_error(TYPE_NAMES.get(other.cast_unsigned() as usize).copied().unwrap_or("object"), "", &[])),
    })
}

/// A core value as JavaScript's.
pub(crate) fn to_js(js: Js, v: &Value) -> Result<Raw> {
    let env = js.0;
    match v {
        Value::Null => out!(napi_get_null(env)),
        Value::Bool(b) => out!(napi_get_boolean(env, *b)),
        Value::Number(n) => out!(napi_create_double(env, n.as_f64().unwrap_or(f64::NAN))),
        Value::String(s) => js.string(s),
        Value::Array(items) => {
            let array = out!(napi_create_array_with_length(env, items.len()))?;
            for (i, item) in items.iter().enumerate() {
                ok(unsafe { sys::napi_set_element(env, array, u32::try_from(i).unwrap_or(u32::MAX), to_js(js, item)?) })?;
            }
            Ok(array)
        }
        Value::Object(map) => {
            // Own properties, also for `__proto__` (as `JSON.parse` makes them), defined in one call.
            let attributes = sys::PropertyAttributes::writable | sys::PropertyAttributes::enumerable | sys::PropertyAttributes::configurable;
            let mut properties = smallvec::SmallVec::<[sys::napi_property_descriptor; 8]>::with_capacity(map.len());
            for (key, item) in map {
                let (name, value, null) = (js.string(key)?, to_js(js, item)?, ptr::null_mut());
                properties.push(Property { utf8name: ptr::null(), name, method: None, getter: None, setter: None, value, attributes, data: null });
            }
            let object = out!(napi_create_object(env))?;
            ok(unsafe { sys::napi_define_properties(env, object, properties.len(), properties.as_ptr()) })?;
            Ok(object)
        }
    }
}

/// Keeps `index.js`'s classes by name (errors, refusal classes, cel-lite's), which the addon throws.
#[napi(ts_args_type = "classes: Record<string, Function>")]
pub fn init(env: Env, classes: Unknown) -> Result<()> {
    let js = Js(env.raw());
    CLASSES.set(out!(napi_create_reference(js.0, classes.raw(), 1))?);
    INVOKE.set(out!(napi_create_reference(js.0, js.get(classes.raw(), c"invoke")?, 1))?);
    NO_PROGRESS.set(out!(napi_create_reference(js.0, js.get(classes.raw(), c"noProgress")?, 1))?);
    Ok(())
}

/// A value read by the core's rules, thrown as the core's error.
pub(crate) fn value(js: Js, v: &Unknown) -> Result<Value> {
    from_js(js, v.raw(), 0).map_err(|e| js.raise(&e))
}

/// A core answer as a JavaScript value, or its error thrown.
pub(crate) fn answer<'e>(js: Js, answer: std::result::Result<Value, CoreError>) -> Result<Unknown<'e>> {
    answer.map_err(|e| js.raise(&e)).and_then(|v| to_js(js, &v)).map(|v| js.unknown(v))
}

/// A core host method that needs no harness (`harnessweaver_core::host::request`): `tables`, `sanitize`, `definition_digest`, ….
#[napi(ts_args_type = "method: string, args: object", ts_return_type = "any")]
pub fn request<'e>(env: &'e Env, method: String, args: Unknown) -> Result<Unknown<'e>> {
    let js = Js(env.raw());
    answer(js, core::request(&method, &value(js, &args)?))
}

/// The definition digest (`sha256:…`) of a tool's name, description, input schema and output schema, if any.
#[napi(ts_args_type = "name: string, description: string, inputSchema: unknown, outputSchema?: unknown")]
pub fn definition_digest(env: Env, name: String, description: String, input_schema: Unknown, output_schema: Option<Unknown>) -> Result<String> {
    let js = Js(env.raw());
    let output = output_schema.map(|o| value(js, &o)).transpose()?.filter(|o| !o.is_null());
    core::tool_definition_digest(&name, &description, &value(js, &input_schema)?, output.as_ref()).map_err(|e| js.raise(&e))
}

/// The canonical JSON text of a value.
#[napi(ts_args_type = "value: unknown")]
pub fn canonical_json(env: Env, value: Unknown) -> Result<String> {
    let js = Js(env.raw());
    canonical::to_string(&self::value(js, &value)?).map_err(|e| js.raise(&e))
}

/// Runs the `harnessweaver` command line with `args` (without the program name); returns the exit code.
#[napi]
pub fn cli_run(args: Vec<String>) -> i32 {
    harnessweaver_runtime::cli::run(&args)
}
