//! `spec.flow.intent`: the words of a user's request that ask for what a
//! tool does (a booking, a payment, a calendar entry). A state-changing call
//! in a run whose task never asks for that kind of action is what an
//! injected instruction looks like; the governor refuses it
//! (`action_not_requested`) or asks a human (`flow.unrequested_actions`).
//!
//! An entry is one or more words: the task asks for the action when, for
//! some entry, each of its words is a word of the task (in any order,
//! anywhere). A word ending in `*` matches every task word it begins
//! (`book*` matches `book`, `booking`, `booked`). Words are compared after
//! NFKC and lower case, split at everything that is not a letter or a digit
//! (`e-mail` is the words `e` and `mail`).

use unicode_normalization::UnicodeNormalization;

/// Shortest stem a `*` may follow: `re*` would match most requests.
pub const MIN_STEM_CHARS: usize = 3;
/// Most entries a tool may declare, and most words in one entry.
pub const MAX_ENTRIES: usize = 64;
/// Most words in one entry.
pub const MAX_ENTRY_WORDS: usize = 8;
/// Most bytes of a task that are read for its words.
pub const MAX_TASK_BYTES: usize = 64 * 1024;

/// One word of an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Word {
    text: String,
    /// Written with a trailing `*`: matches the task words it begins.
    prefix: bool,
}

/// A tool's compiled `flow.intent`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Intent {
    /// Each entry as written (normalised), and its words.
    entries: Vec<(String, Vec<Word>)>,
}

/// The words of `text`: NFKC, lower case, split at what is not a letter or a digit.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in text.nfkc().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            cur.push(c);
        } else if !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

impl Intent {
    /// Compiles the entries as written; `Err` says what is wrong with one.
    pub fn compile(entries: &[String]) -> Result<Self, String> {
        if entries.is_empty() {
            return Err("list at least one entry (the words a request for this action uses), or leave `intent` out".into());
        }
        if entries.len() > MAX_ENTRIES {
            return Err(format!("at most {MAX_ENTRIES} entries"));
        }
        let mut out = Vec::with_capacity(entries.len());
        for entry in entries {
            let mut ws = Vec::new();
            for piece in entry.split_whitespace() {
                let (stem, prefix) = match piece.strip_suffix('*') {
                    Some(stem) => (stem, true),
                    None => (piece, false),
                };
                if stem.contains('*') {
                    return Err(format!("`{entry}`: `*` may only end a word"));
                }
                let parts = words(stem);
                if parts.is_empty() {
                    return Err(format!("`{entry}`: `{piece}` has no letter or digit"));
                }
                let last = parts.len() - 1;
                for (i, text) in parts.into_iter().enumerate() {
                    let prefix = prefix && i == last;
                    if prefix && text.chars().count() < MIN_STEM_CHARS {
                        return Err(format!("`{entry}`: a word ending in `*` needs at least {MIN_STEM_CHARS} letters before it"));
                    }
                    ws.push(Word { text, prefix });
                }
            }
            if ws.is_empty() {
                return Err("an entry is empty".into());
            }
            if ws.len() > MAX_ENTRY_WORDS {
                return Err(format!("`{entry}`: at most {MAX_ENTRY_WORDS} words in one entry"));
            }
            let shown = ws.iter().map(|w| if w.prefix { format!("{}*", w.text) } else { w.text.clone() }).collect::<Vec<_>>().join(" ");
            out.push((shown, ws));
        }
        Ok(Self { entries: out })
    }

    /// The first entry (normalised) whose every word is a word of `task`;
    /// `None` when the task asks for none (or there is no task).
    pub fn requested_by(&self, task: Option<&str>) -> Option<&str> {
        let task = task?;
        let mut said = words(crate::text::truncate(task, MAX_TASK_BYTES));
        said.sort_unstable();
        said.dedup();
        let has = |w: &Word| {
            if w.prefix {
                // The first word not below the stem is the only candidate a prefix can begin.
                let i = said.partition_point(|s| s.as_str() < w.text.as_str());
                said.get(i).is_some_and(|s| s.starts_with(&w.text))
            } else {
                said.binary_search(&w.text).is_ok()
            }
        };
        self.entries.iter().find(|(_, ws)| ws.iter().all(has)).map(|(shown, _)| shown.as_str())
    }

    /// The entries, normalised, as the tool's description shows them.
    pub fn entries(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(shown, _)| shown.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intent(entries: &[&str]) -> Intent {
        Intent::compile(&entries.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn an_entry_matches_when_each_of_its_words_is_in_the_task() {
        let i = intent(&["book* hotel*", "reserv* room*"]);
        assert_eq!(i.requested_by(Some("Please BOOK the cheapest Hotel in Paris")), Some("book* hotel*"));
        assert_eq!(i.requested_by(Some("Which hotels would you book?")), Some("book* hotel*"));
        assert_eq!(i.requested_by(Some("I need a room; make a reservation")), Some("reserv* room*"));
        assert_eq!(i.requested_by(Some("Book a car in Paris")), None);
        assert_eq!(i.requested_by(Some("hotelbook")), None);
        assert_eq!(i.requested_by(None), None);
    }

    #[test]
    fn words_are_compared_after_nfkc_and_case_and_split_at_punctuation() {
        let i = intent(&["e-mail", "calendar"]);
        assert_eq!(i.entries().collect::<Vec<_>>(), vec!["e mail", "calendar"]);
        assert_eq!(i.requested_by(Some("send an E-Mail to Bob")), Some("e mail"));
        assert_eq!(i.requested_by(Some("add it to my ＣＡＬＥＮＤＡＲ.")), Some("calendar"));
        assert_eq!(i.requested_by(Some("calendars")), None);
    }

    #[test]
    fn bad_entries_are_refused_at_load() {
        for bad in [&[][..], &["re*"], &["b*ook"], &["*"], &["  "]] {
            let entries: Vec<String> = bad.iter().map(|s| s.to_string()).collect();
            assert!(Intent::compile(&entries).is_err(), "{bad:?}");
        }
    }
}
