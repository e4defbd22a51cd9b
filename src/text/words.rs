//! Words: the one place `src/text` straightens apostrophes and splits contractions (with the
//! tables of [`crate::text::lexicon`]); each analysis builds its own tokens on these.

use std::borrow::Cow;

use crate::text::lexicon::{contracted_ending, contracted_word, IS_AFTER};

/// Typographic apostrophes that stand for `'` inside words ("I’m", "John‘s", "Iʼm").
pub const APOSTROPHES: [char; 3] = ['\u{2019}', '\u{2018}', '\u{02BC}'];

/// Whether `c` is an apostrophe, straight or typographic.
pub fn is_apostrophe(c: char) -> bool {
    c == '\'' || APOSTROPHES.contains(&c)
}

/// `c` with typographic apostrophes and the backtick (typed for one) made `'`.
pub fn straighten(c: char) -> char {
    if c == '`' || APOSTROPHES.contains(&c) {
        '\''
    } else {
        c
    }
}

/// `text` with [`straighten`] applied; borrowed when there is nothing to straighten.
pub fn straightened(text: &str) -> Cow<'_, str> {
    if text.chars().any(|c| straighten(c) != c) {
        Cow::Owned(text.chars().map(straighten).collect())
    } else {
        Cow::Borrowed(text)
    }
}

/// `text` with typographic apostrophes made `'` (backticks kept).
pub fn apostrophes_straightened(text: &str) -> Cow<'_, str> {
    if text.contains(APOSTROPHES) {
        Cow::Owned(text.replace(APOSTROPHES, "'"))
    } else {
        Cow::Borrowed(text)
    }
}

/// How a lower-case word with an apostrophe splits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contraction<'a> {
    /// a whole contracted word and the words it stands for: "can't" -> ["can", "not"]
    Whole(&'static [&'static str]),
    /// a word and a contracted ending: "we'll" -> ("we", "will"); the word may be empty
    Ending(&'a str, &'static str),
    /// "'s" meaning "is" after the word: "it's" -> "it"
    Is(&'a str),
    /// "'s" marking a possessive: "alice's" -> "alice"; the word may be empty
    Possessive(&'a str),
}

/// The contraction in a lower-case word with straight apostrophes, if it has one: a whole
/// contracted word first, then a contracted ending, then "'s".
pub fn contraction(lower: &str) -> Option<Contraction<'_>> {
    if let Some(words) = contracted_word(lower) {
        return Some(Contraction::Whole(words));
    }
    if let Some((word, ending)) = contracted_ending(lower) {
        return Some(Contraction::Ending(word, ending));
    }
    let word = lower.strip_suffix("'s")?;
    Some(if IS_AFTER.contains(&word) {
        Contraction::Is(word)
    } else {
        Contraction::Possessive(word)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contractions_split_whole_words_endings_and_s() {
        assert_eq!(
            contraction("can't"),
            Some(Contraction::Whole(&["can", "not"]))
        );
        assert_eq!(
            contraction("we'll"),
            Some(Contraction::Ending("we", "will"))
        );
        assert_eq!(contraction("it's"), Some(Contraction::Is("it")));
        assert_eq!(
            contraction("alice's"),
            Some(Contraction::Possessive("alice"))
        );
        assert_eq!(contraction("alice"), None);
    }

    #[test]
    fn typographic_apostrophes_straighten_and_backticks_only_in_words() {
        assert_eq!(straightened("I\u{2019}m Iʼm `x`"), "I'm I'm 'x'");
        assert_eq!(apostrophes_straightened("I\u{2019}m `x`"), "I'm `x`");
        assert!(matches!(straightened("plain"), Cow::Borrowed(_)));
        assert!(is_apostrophe('\u{2018}') && !is_apostrophe('`'));
    }
}
