//! Words more than one text analysis reads (contractions and what they stand for, doubled
//! consonants undone), each kept once; a list only one analysis reads lives in its module.

/// Whole words and the words they stand for: "can't" -> "can not", "gonna" -> "going to",
/// and the same without their apostrophe ("dont").
pub const CONTRACTED_WORDS: &[(&str, &[&str])] = &[
    ("can't", &["can", "not"]),
    ("cant", &["can", "not"]),
    ("cannot", &["can", "not"]),
    ("won't", &["will", "not"]),
    ("wont", &["will", "not"]),
    ("shan't", &["shall", "not"]),
    ("let's", &["let", "us"]),
    ("i'm", &["i", "am"]),
    ("im", &["i", "am"]),
    ("gonna", &["going", "to"]),
    ("wanna", &["want", "to"]),
    ("gotta", &["got", "to"]),
    ("dont", &["do", "not"]),
    ("doesnt", &["does", "not"]),
    ("didnt", &["did", "not"]),
    ("isnt", &["is", "not"]),
    ("ain't", &["is", "not"]),
    ("arent", &["are", "not"]),
    ("wasnt", &["was", "not"]),
    ("werent", &["were", "not"]),
    ("havent", &["have", "not"]),
    ("hasnt", &["has", "not"]),
    ("hadnt", &["had", "not"]),
    ("wouldnt", &["would", "not"]),
    ("couldnt", &["could", "not"]),
    ("shouldnt", &["should", "not"]),
];

/// Endings and the word each stands for: "we'll" -> "we" + "will".
pub const CONTRACTED_ENDINGS: &[(&str, &str)] = &[
    ("n't", "not"),
    ("'ll", "will"),
    ("'re", "are"),
    ("'ve", "have"),
    ("'d", "would"),
    ("'m", "am"),
];

/// Words whose "'s" is "is" ("it's", "there's"); after any other word it is a possessive
/// ("Alice's").
pub const IS_AFTER: &[&str] = &[
    "it", "he", "she", "that", "what", "there", "here", "who", "where", "how",
];

/// The words a whole contracted word stands for ("can't" -> ["can", "not"]).
pub fn contracted_word(word: &str) -> Option<&'static [&'static str]> {
    CONTRACTED_WORDS
        .iter()
        .find(|(contracted, _)| *contracted == word)
        .map(|(_, words)| *words)
}

/// A word split at a contracted ending: "we'll" -> ("we", "will").
pub fn contracted_ending(word: &str) -> Option<(&str, &'static str)> {
    CONTRACTED_ENDINGS
        .iter()
        .find_map(|(ending, full)| word.strip_suffix(ending).map(|stem| (stem, *full)))
}

/// "shipp" -> "ship": a stem of three or more letters with its doubled final consonant undone
/// (the stem of "shipped", "planning").
pub fn undouble(stem: &str) -> Option<&str> {
    let mut chars = stem.char_indices().rev();
    let (last_at, last) = chars.next()?;
    let (_, before) = chars.next()?;
    let long_enough = chars.next().is_some();
    (long_enough && last == before && !"aeiou".contains(last)).then(|| &stem[..last_at])
}

/// Last words of organisation names ("Acme Corp", "Initech GmbH"), and the possessive that
/// may follow one ("Acme's").
#[rustfmt::skip]
pub const ORG_SUFFIXES: &[&str] = &[
    "inc", "inc.", "corp", "corp.", "corporation", "ltd", "ltd.", "llc", "gmbh", "plc", "co",
    "co.", "company", "labs", "technologies", "systems", "group", "foundation", "bank",
    "university", "ag", "sa", "'s",
];

/// Irregular finite verb forms of notes and chat ("went", "was", "told"): a sentence with one
/// has a verb.
#[rustfmt::skip]
pub const IRREGULAR_FINITE_VERBS: &[&str] = &[
    "is", "was", "has", "had", "does", "did", "went", "goes", "left", "ran", "led", "wrote",
    "built", "said", "says", "thought", "took", "made", "got", "became", "came", "drove", "met",
    "saw", "told", "spent", "sold", "bought", "paid", "knew", "spoke", "ate", "drank", "swam",
    "slept", "broke", "felt", "held", "kept", "lost", "won", "began", "grew", "gave", "sent",
    "brought", "taught", "caught", "fell", "flew", "rode", "quit", "hid", "chose", "forgot",
    "understood", "wore", "sang", "shut", "set", "lent", "meant",
];

/// More irregular finite forms, of expository prose ("rose", "lies", "forms"): with
/// [`IRREGULAR_FINITE_VERBS`], what a document's sentence may have for a verb.
#[rustfmt::skip]
pub const PROSE_FINITE_VERBS: &[&str] = &[
    "are", "were", "am", "rose", "lay", "lies", "stood", "arose", "bore", "drew", "froze", "shone",
    "struck", "spread", "rang", "sank", "sprang", "fought", "sought", "dealt", "forms",
    "underwent", "overtook",
];
