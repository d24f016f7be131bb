//! Step 9's cut: a result longer than `max_bytes` UTF-8 bytes becomes its
//! first `max_bytes` bytes, cut on a character boundary. A JSON result
//! becomes its canonical (compact) JSON text first, so every language cuts
//! the same bytes.

use serde_json::Value;

use crate::canonical;

/// Cuts `value` to `max_bytes`; returns the value (unchanged when it fits)
/// and whether it was cut.
pub fn cut(value: Value, max_bytes: usize) -> (Value, bool) {
    let text = match &value {
        Value::String(s) => {
            if s.len() <= max_bytes {
                return (value, false);
            }
            s.as_str()
        }
        other => {
            if canonical::len_upper_bound(other, max_bytes) <= max_bytes {
                return (value, false);
            }
            let Ok(text) = canonical::to_string(other) else {
                return (Value::String(String::new()), true);
            };
            if text.len() <= max_bytes {
                return (value, false);
            }
            return (Value::String(truncate(&text, max_bytes).to_string()), true);
        }
    };
    (Value::String(truncate(text, max_bytes).to_string()), true)
}

pub use crate::text::truncate;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cuts_on_char_boundaries() {
        assert_eq!(cut(json!("héllo"), 2), (json!("h"), true));
        assert_eq!(cut(json!("héllo"), 3), (json!("hé"), true));
        assert_eq!(cut(json!("héllo"), 6), (json!("héllo"), false));
        assert_eq!(cut(json!({"b": 1, "a": "x"}), 9), (json!("{\"a\":\"x\","), true));
        assert_eq!(cut(json!({"a": 1}), 100), (json!({"a": 1}), false));
        // Near the limit the exact length decides: 7 bytes fit in 7.
        assert_eq!(cut(json!({"a": 1}), 7), (json!({"a": 1}), false));
        assert_eq!(cut(json!({"a": 1}), 6), (json!("{\"a\":1"), true));
    }
}
