//! The specifics of a text: numbers, codes and names. Two texts that a sentence encoder finds
//! nearly identical are still different memories when their specifics differ ("meeting at 9"
//! and "meeting at 10"; "Anna leads it" and "Omar leads it").

use std::collections::BTreeSet;

/// Lower-cased tokens that carry a digit, and capitalised words that do not start a sentence
/// (names, products, places). Punctuation around tokens is ignored.
pub fn specifics(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut sentence_start = true;
    for raw in text.split_whitespace() {
        let token = raw.trim_matches(|c: char| !c.is_alphanumeric());
        let ends_sentence = raw.ends_with(['.', '!', '?', ':', ';']);
        if !token.is_empty() {
            let has_digit = token.chars().any(|c| c.is_ascii_digit());
            let capitalised = token.chars().next().is_some_and(char::is_uppercase);
            if has_digit || (capitalised && !sentence_start && token != "I") {
                found.insert(token.to_lowercase());
            }
            sentence_start = false;
        }
        if ends_sentence {
            sentence_start = true;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_names_are_specifics_sentence_starts_are_not() {
        let s = specifics("The standup moved to 9:30. Ask Anna or ZX-44, not me.");
        assert_eq!(
            s.into_iter().collect::<Vec<_>>(),
            vec!["9:30", "anna", "zx-44"]
        );
        assert!(specifics("I like tea. Tea is good.").is_empty());
        assert_eq!(specifics("fact number 1"), specifics("Fact number 1!"));
        assert_ne!(specifics("fact number 1"), specifics("fact number 2"));
    }
}
