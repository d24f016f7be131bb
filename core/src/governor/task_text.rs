//! The run's task as people type it (issue 23): a sentence that follows a
//! host name without a space ("post it to www.example.com.They sent …")
//! makes the URL pattern read one host, `www.example.com.they`. The task is
//! the user's own text, so provenance reads it twice: as written, and with a
//! space after each `.` that ends a word and starts a capitalised one (a
//! host name written in prose is lower case). The second reading only adds
//! trusted values the user wrote; it removes none.

/// `task` with a space after each `.` that follows a lower-case letter or a
/// digit and comes before a capital followed by a lower-case letter; `None`
/// when there is none.
pub(super) fn sentences_apart(task: &str) -> Option<String> {
    let b = task.as_bytes();
    let boundary = |i: usize| {
        matches!(
            (i.checked_sub(1).and_then(|p| b.get(p)), b.get(i), b.get(i + 1), b.get(i + 2)),
            (Some(before), Some(b'.'), Some(upper), Some(lower))
                if (before.is_ascii_lowercase() || before.is_ascii_digit()) && upper.is_ascii_uppercase() && lower.is_ascii_lowercase()
        )
    };
    if !(0..b.len()).any(boundary) {
        return None;
    }
    let mut out = String::with_capacity(task.len() + 8);
    for (i, c) in task.char_indices() {
        out.push(c);
        if c == '.' && boundary(i) {
            out.push(' ');
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sentence_typed_against_a_host_is_set_apart() {
        assert_eq!(sentences_apart("post it to www.our-company.com.They sent it").as_deref(), Some("post it to www.our-company.com. They sent it"));
        assert_eq!(sentences_apart("Visit Booking.com and www.a.example/x.html. Then stop."), None);
        assert_eq!(sentences_apart("ends with a dot."), None);
        assert_eq!(sentences_apart("e.G. no"), None);
    }
}
