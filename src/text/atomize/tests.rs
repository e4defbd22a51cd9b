//! Unit tests of note splitting: sentences, cleaning, subjects, pronouns, lengths, and
//! whole notes atomized.

use super::{atomize, resolve_first_pronoun, sentence_spans, split_sentences};

fn sentences(text: &str) -> Vec<String> {
    split_sentences(text)
}

// ----- split_sentences ---------------------------------------------------------------

#[test]
fn titles_and_times_do_not_end_sentences() {
    assert_eq!(
        sentences(
            "Mr. Smith met Dr. Jones at 3 p.m. They talked. Mrs. Lee and Ms. Park joined later."
        ),
        [
            "Mr. Smith met Dr. Jones at 3 p.m.",
            "They talked.",
            "Mrs. Lee and Ms. Park joined later."
        ]
    );
    assert_eq!(
        sentences("The meeting ends at 5 p.m. on Friday. Bob leaves at 6 p.m. Carol stays."),
        [
            "The meeting ends at 5 p.m. on Friday.",
            "Bob leaves at 6 p.m.",
            "Carol stays."
        ]
    );
}

#[test]
fn latin_abbreviations_never_end_sentences() {
    assert_eq!(
        sentences("We use tools, e.g. Jira, i.e. the cloud one. It costs $3.50 vs. $5 elsewhere."),
        [
            "We use tools, e.g. Jira, i.e. the cloud one.",
            "It costs $3.50 vs. $5 elsewhere."
        ]
    );
    assert_eq!(
        sentences("Costs rose 5% etc. and more etc. Then we left."),
        ["Costs rose 5% etc. and more etc.", "Then we left."]
    );
}

#[test]
fn acronyms_end_a_sentence_only_before_a_sentence_opener() {
    assert_eq!(
        sentences("He moved to the U.S. last year. She moved to the U.S. The move was hard."),
        [
            "He moved to the U.S. last year.",
            "She moved to the U.S.",
            "The move was hard."
        ]
    );
}

#[test]
fn company_abbreviations() {
    assert_eq!(
        sentences("Acme Inc. is based in Ohio. They bought Foo Ltd. Their CEO left."),
        [
            "Acme Inc. is based in Ohio.",
            "They bought Foo Ltd.",
            "Their CEO left."
        ]
    );
}

#[test]
fn decimals_versions_and_domains() {
    assert_eq!(
        sentences("Pi is 3.14. Upgrade to v1.2.3 now. See example.com for details."),
        [
            "Pi is 3.14.",
            "Upgrade to v1.2.3 now.",
            "See example.com for details."
        ]
    );
}

#[test]
fn initials() {
    assert_eq!(
        sentences(
            "J. R. R. Tolkien wrote The Hobbit. C. S. Lewis was his friend. \
             Plan B. The rest failed."
        ),
        [
            "J. R. R. Tolkien wrote The Hobbit.",
            "C. S. Lewis was his friend.",
            "Plan B.",
            "The rest failed."
        ]
    );
}

#[test]
fn ellipses_end_a_sentence_only_before_a_capital() {
    assert_eq!(
        sentences("I waited... and waited. It failed… Nothing happened… really."),
        [
            "I waited... and waited.",
            "It failed…",
            "Nothing happened… really."
        ]
    );
}

#[test]
fn quotes_and_brackets_after_the_full_stop() {
    assert_eq!(
        sentences(r#"He said "Stop." Then he left. "Why?" she asked. (See the doc.) Next!"#),
        [
            r#"He said "Stop.""#,
            "Then he left.",
            r#""Why?" she asked."#,
            "(See the doc.)",
            "Next!"
        ]
    );
}

#[test]
fn number_abbreviation_and_milliseconds() {
    assert_eq!(
        sentences("Room No. 5 is free. The answer is no. p99 is 80 ms. Dr. Patel agreed."),
        [
            "Room No. 5 is free.",
            "The answer is no.",
            "p99 is 80 ms.",
            "Dr. Patel agreed."
        ]
    );
    assert_eq!(
        sentences("She has a Ph.D. from MIT. Her thesis was on NLP."),
        ["She has a Ph.D. from MIT.", "Her thesis was on NLP."]
    );
}

#[test]
fn line_breaks() {
    let text = "Line one without punctuation\nLine two also without\n\n\
                A wrapped paragraph that is long enough to be wrapped\n\
                across two lines. Done.\n\
                The EU region follows in Q3 and is long enough\n\
                (v2.3.1 or later).\n\
                Sent to Alice and\n\
                Bob, who agreed.";
    assert_eq!(
        sentences(text),
        [
            "Line one without punctuation",
            "Line two also without",
            "A wrapped paragraph that is long enough to be wrapped across two lines.",
            "Done.",
            "The EU region follows in Q3 and is long enough (v2.3.1 or later).",
            "Sent to Alice and Bob, who agreed."
        ]
    );
}

#[test]
fn list_items_are_sentences_of_their_own() {
    let text = "- First item\n- Second item. With two sentences\n* Third\n• Fourth\n\
                1. Numbered one\n2) Numbered two\n(3) Numbered three\n\
                - [ ] Open todo\n- [x] Done todo\n  continued in lower case";
    assert_eq!(
        sentences(text),
        [
            "First item",
            "Second item.",
            "With two sentences",
            "Third",
            "Fourth",
            "Numbered one",
            "Numbered two",
            "Numbered three",
            "Open todo",
            "Done todo continued in lower case"
        ]
    );
}

#[test]
fn headings_labels_and_rules_are_dropped() {
    let text = "# Heading\n## Sub heading ##\nText under it.\n---\n**Bold label**\n\
                Action items:\n**Owner:** Alice owns it.\n#hashtag stays";
    assert_eq!(
        sentences(text),
        ["Text under it.", "Owner: Alice owns it.", "#hashtag stays"]
    );
}

#[test]
fn text_without_final_punctuation_and_empty_input() {
    assert_eq!(
        sentences("no punctuation at all"),
        ["no punctuation at all"]
    );
    assert_eq!(
        sentences("Two. sentences in lower case"),
        ["Two.", "sentences in lower case"]
    );
    assert!(sentences("").is_empty());
    assert!(sentences(" \n\t\n ... \n").is_empty());
}

#[test]
fn code_blocks_and_chat_turns() {
    let text = "```\nfn main() {}\nlet x = 1;\n```\nAfter code.\n\
                alice: hi there. i moved\nbob: hey\nNote: not a speaker\n[10:42] Priya: on it";
    assert_eq!(
        sentences(text),
        [
            "fn main() {}\nlet x = 1;",
            "After code.",
            "alice: hi there.",
            "i moved",
            "bob: hey",
            "Note: not a speaker",
            "Priya: on it"
        ]
    );
}

#[test]
fn unicode_text() {
    assert_eq!(
        sentences("Zoë runs the Café Ünïcode. Ça marche! «Très bien.» Fin"),
        [
            "Zoë runs the Café Ünïcode.",
            "Ça marche!",
            "«Très bien.»",
            "Fin"
        ]
    );
}

// ----- atomize: subjects ---------------------------------------------------------------

#[test]
fn pronouns_take_the_previous_subject() {
    assert_eq!(
        atomize(
            "Alice moved to Berlin in May. She works at SAP now. Her manager is Bob.",
            200
        ),
        [
            "Alice moved to Berlin in May.",
            "Alice works at SAP now.",
            "Alice's manager is Bob."
        ]
    );
    assert_eq!(
        atomize(
            "The billing service was rewritten in Go. It now runs on Kubernetes. \
             Its p99 is 80 ms.",
            200
        ),
        [
            "The billing service was rewritten in Go.",
            "The billing service now runs on Kubernetes.",
            "The billing service's p99 is 80 ms."
        ]
    );
}

#[test]
fn possessors_and_predicates_type_the_antecedent() {
    // The possessor stands in when the possessive phrase does not agree.
    assert_eq!(
        atomize("Sarah's birthday is on 3 May. She turns 30.", 200),
        ["Sarah's birthday is on 3 May.", "Sarah turns 30."]
    );
    // What a bare name is said to be tells a company from a person.
    assert_eq!(
        atomize(
            "Stripe is our payment provider. It charges 2.9%. Dr. Smith is our GP. \
             He is based in Leeds. SAP acquired Qualtrics. It paid $8B.",
            200
        ),
        [
            "Stripe is our payment provider.",
            "Stripe charges 2.9%.",
            "Dr. Smith is our GP.",
            "Dr. Smith is based in Leeds.",
            "SAP acquired Qualtrics.",
            "SAP paid $8B."
        ]
    );
}

#[test]
fn fragments_get_the_previous_subject() {
    assert_eq!(
        atomize(
            "Carol joined the team in February. Works from Lisbon. Also likes hiking.",
            200
        ),
        [
            "Carol joined the team in February.",
            "Carol works from Lisbon.",
            "Carol likes hiking."
        ]
    );
    // A later auxiliary shows the verb-looking first word is a noun.
    assert_eq!(
        atomize("Carol joined in May. Plans for Q3 are ready.", 200),
        ["Carol joined in May.", "Plans for Q3 are ready."]
    );
}

#[test]
fn noun_phrase_subjects_and_agreement() {
    assert_eq!(
        atomize(
            "My sister lives in Rome. She is a nurse. A new intern joined on Monday. \
             He is based in Oslo.",
            200
        ),
        [
            "My sister lives in Rome.",
            "My sister is a nurse.",
            "A new intern joined on Monday.",
            "The new intern is based in Oslo."
        ]
    );
    // A group takes "they" with the verb made singular; plurals keep theirs.
    assert_eq!(
        atomize(
            "Our team ships weekly. They are hiring two engineers. The interns start Monday. \
             Their desks are on floor 3.",
            200
        ),
        [
            "Our team ships weekly.",
            "Our team is hiring two engineers.",
            "The interns start Monday.",
            "The interns' desks are on floor 3."
        ]
    );
    assert_eq!(
        atomize("Alice and Bob moved to Lisbon. They love it.", 200),
        ["Alice and Bob moved to Lisbon.", "Alice and Bob love it."]
    );
}

#[test]
fn pronouns_that_do_not_agree_or_have_no_antecedent_stay() {
    assert_eq!(
        atomize(
            "The API is slow. She fixed it. Alice joined. It rained all week.",
            200
        ),
        [
            "The API is slow.",
            "She fixed it.",
            "Alice joined.",
            "It rained all week."
        ]
    );
    assert_eq!(
        atomize(
            "We rewrote the billing service. It is important to test it.",
            200
        ),
        [
            "We rewrote the billing service.",
            "It is important to test it."
        ]
    );
    // Only the previous sentence's subject counts.
    assert_eq!(
        atomize(
            "Alice moved to Berlin. The city is expensive. She likes it.",
            200
        ),
        [
            "Alice moved to Berlin.",
            "The city is expensive.",
            "She likes it."
        ]
    );
    // "her" is Alice, so whoever went is someone else (most likely the writer).
    assert_eq!(
        atomize("Alice moved to Berlin. Went to visit her in June.", 200),
        ["Alice moved to Berlin.", "Went to visit her in June."]
    );
}

#[test]
fn first_person_statements_stay_as_they_are() {
    assert_eq!(
        atomize(
            "I moved to Berlin. We use Rust. My team ships weekly. Our office is in Mitte.",
            200
        ),
        [
            "I moved to Berlin.",
            "We use Rust.",
            "My team ships weekly.",
            "Our office is in Mitte."
        ]
    );
}

#[test]
fn contractions_and_introductory_phrases() {
    assert_eq!(
        atomize(
            "Alice joined SAP. She's moving to Munich. She's been there twice. \
             In May, she'll start.",
            200
        ),
        [
            "Alice joined SAP.",
            "Alice is moving to Munich.",
            "Alice has been there twice.",
            "In May, Alice will start."
        ]
    );
}

#[test]
fn headings_give_context() {
    let note = "## Alice\n- Moved to Berlin in May\n- Works at SAP\n\n\
                ## Stack\n- Rust\n- PostgreSQL 16\n- Redis for caching and rate limits";
    assert_eq!(
        atomize(note, 200),
        [
            "Alice moved to Berlin in May",
            "Alice works at SAP",
            "Stack: Rust",
            "Stack: PostgreSQL 16",
            "Redis for caching and rate limits"
        ]
    );
}

// ----- atomize: filler -----------------------------------------------------------------

#[test]
fn greetings_fillers_and_sign_offs_are_dropped() {
    let note = "Hi all, quick recap of today's sync:\nHope you're well! So, we shipped v2.\n\
                Anyway, the API is stable. Well, Bob is on leave. Basically, Carol covers.\n\
                Oh and the demo is on Friday. Okay so we also fixed the login bug.\n\
                Ok so basically the beta starts in May.\nThanks!\nCheers,\nAlice";
    assert_eq!(
        atomize(note, 200),
        [
            "We shipped v2.",
            "The API is stable.",
            "Bob is on leave.",
            "Carol covers.",
            "The demo is on Friday.",
            "We also fixed the login bug.",
            "The beta starts in May."
        ]
    );
}

#[test]
fn interjections_are_removed() {
    assert_eq!(
        atomize(
            "Um, staging was down lol. It's, uh, fixed now haha. The deploy went fine 🎉",
            200
        ),
        [
            "Staging was down.",
            "Staging is fixed now.",
            "The deploy went fine"
        ]
    );
}

#[test]
fn questions_and_sentences_without_information_are_dropped() {
    let note = "Who owns the rota? Okay. Sounds good. See you tomorrow. Thanks, Alice! \
                Let me know if you have questions. Got it, will do. The rota is owned by Dan.";
    assert_eq!(atomize(note, 200), ["The rota is owned by Dan."]);
}

#[test]
fn atoms_are_deduplicated_ignoring_case_whitespace_and_final_punctuation() {
    let note = "The API uses OAuth 2.0.\nthe   API uses OAuth 2.0\nTHE API USES OAUTH 2.0!";
    assert_eq!(atomize(note, 200), ["The API uses OAuth 2.0."]);
}

#[test]
fn numbers_dates_names_and_code_stay_intact() {
    let note = "So, `user_id` is a UUIDv7 since v1.2.3. Set MAX_RETRIES=5 on 2025-03-12 at 09:30. \
                Dr. O'Neill owns `__init__.py`. The CLI prints `lol` (lol). \
                The budget is $48,500.75 (i.e. 12% more).";
    assert_eq!(
        atomize(note, 200),
        [
            "`user_id` is a UUIDv7 since v1.2.3.",
            "Set MAX_RETRIES=5 on 2025-03-12 at 09:30.",
            "Dr. O'Neill owns `__init__.py`.",
            "The CLI prints `lol`.",
            "The budget is $48,500.75 (i.e. 12% more)."
        ]
    );
}

// ----- atomize: length -----------------------------------------------------------------

#[test]
fn long_sentences_are_cut_at_clause_boundaries() {
    let note = "We'll go with PostgreSQL 16 for billing; MySQL is off the table. \
                Alice moved to Berlin in May, and she works at SAP now.";
    assert_eq!(
        atomize(note, 45),
        [
            "We'll go with PostgreSQL 16 for billing.",
            "MySQL is off the table.",
            "Alice moved to Berlin in May.",
            "Alice works at SAP now."
        ]
    );
    // Without a limit (0) or with room to spare nothing is cut.
    assert_eq!(atomize(note, 0).len(), 2);
    assert_eq!(atomize(note, 200).len(), 2);
}

#[test]
fn words_are_never_cut() {
    let note = "Supercalifragilisticexpialidocious is long. \
                The quick brown fox jumps over the lazy dog near the riverbank today.";
    let atoms = atomize(note, 20);
    assert_eq!(
        atoms,
        [
            "Supercalifragilisticexpialidocious",
            "is long.",
            "The quick brown fox",
            "jumps over the lazy",
            "dog near the",
            "riverbank today."
        ]
    );
    let words =
        |text: &str| -> Vec<String> { text.split_whitespace().map(str::to_string).collect() };
    assert_eq!(
        atoms.iter().flat_map(|a| words(a)).collect::<Vec<_>>(),
        words(note)
    );
}

#[test]
fn limits_count_characters_not_bytes() {
    let note = "Zoë mag Crème brûlée, Käse und Grünkohl; ihr Bruder Jürgen bevorzugt Äpfel.";
    for max in [10, 15, 20, 30, 40, 80] {
        for atom in atomize(note, max) {
            assert!(atom.chars().count() <= max, "{atom:?} is over {max}");
        }
    }
}

// ----- atomize: realistic notes ----------------------------------------------------------

const MEETING_NOTE: &str = "# Platform weekly sync, 12 March 2025

Hi all, quick recap of today's sync:

Attendees: Alice Chen, Bob Martins, Carol Diaz, Dan O'Neill.

## Decisions
- We'll go with PostgreSQL 16 for the new billing service; MySQL is off the table.
- The launch moves from 1 April to 15 April. Marketing was informed on Monday.
- Going forward, every PR needs two approvals, and CI must be green before merge.

## Updates
The billing service was rewritten in Go. It now runs on Kubernetes (3 replicas) and
handles about 1,200 requests/s at p99 < 80 ms. Dr. Patel from Acme Inc. reviewed the
design on Tuesday at 10 a.m. She flagged the retry logic in `charge_customer()` as
risky, e.g. duplicate charges after timeouts. Mrs. Okafor approved the Q2 budget of
$48k, i.e. 12% more than Q1.

Carol joined the team in February. Works from Lisbon and leads the data migration. Her
manager is Bob. So, the U.S. region goes live first... The EU region follows in Q3
(v2.3.1 or later).

Um, staging was down for 2 hours yesterday lol. Root cause: an expired TLS cert. Anyway,
Dan set up cert-manager so it renews automatically now.

Oh and Bob is out next week. Basically, Alice covers on-call until he's back. Bob prefers
async standups on Slack. He can't stand 8 a.m. meetings, haha.

## Action items
1. Alice to update the runbook by Friday.
2. Bob to book the load test with Acme.
3. Dan: rotate the API keys (again).

Who owns the on-call rota? Okay. Sounds good. Also, the billing service was rewritten in Go.

Thanks!
Alice
";

#[test]
fn meeting_note() {
    assert!(MEETING_NOTE.chars().count() > 1_500);
    assert_eq!(
        atomize(MEETING_NOTE, 200),
        [
            "Attendees: Alice Chen, Bob Martins, Carol Diaz, Dan O'Neill.",
            "We'll go with PostgreSQL 16 for the new billing service; MySQL is off the table.",
            "The launch moves from 1 April to 15 April.",
            "Marketing was informed on Monday.",
            "Going forward, every PR needs two approvals, and CI must be green before merge.",
            "The billing service was rewritten in Go.",
            "The billing service now runs on Kubernetes (3 replicas) and handles about 1,200 \
             requests/s at p99 < 80 ms.",
            "Dr. Patel from Acme Inc. reviewed the design on Tuesday at 10 a.m.",
            "Dr. Patel flagged the retry logic in `charge_customer()` as risky, e.g. duplicate \
             charges after timeouts.",
            "Mrs. Okafor approved the Q2 budget of $48k, i.e. 12% more than Q1.",
            "Carol joined the team in February.",
            "Carol works from Lisbon and leads the data migration.",
            "Carol's manager is Bob.",
            "The U.S. region goes live first...",
            "The EU region follows in Q3 (v2.3.1 or later).",
            "Staging was down for 2 hours yesterday.",
            "Root cause: an expired TLS cert.",
            "Dan set up cert-manager so it renews automatically now.",
            "Bob is out next week.",
            "Alice covers on-call until he's back.",
            "Bob prefers async standups on Slack.",
            "Bob can't stand 8 a.m. meetings.",
            "Alice to update the runbook by Friday.",
            "Bob to book the load test with Acme.",
            "Dan: rotate the API keys (again).",
        ]
    );
}

#[test]
fn meeting_note_under_a_tight_limit() {
    let atoms = atomize(MEETING_NOTE, 80);
    for atom in &atoms {
        assert!(atom.chars().count() <= 80, "{atom:?}");
    }
    let expected_cuts = [
        "The billing service now runs on Kubernetes (3 replicas).",
        "The billing service handles about 1,200 requests/s at p99 < 80 ms.",
        "Going forward, every PR needs two approvals, and CI must be green before merge.",
    ];
    for cut in expected_cuts {
        assert!(
            atoms.iter().any(|a| a == cut),
            "missing {cut:?} in {atoms:#?}"
        );
    }
    for max in [30, 50, 120] {
        assert!(atomize(MEETING_NOTE, max)
            .iter()
            .all(|a| a.chars().count() <= max));
    }
}

#[test]
fn chat_digest() {
    let chat = "Chat digest: Sam (WhatsApp), 3 June

Sam: hey!! so I finally accepted the offer from Stripe lol
Sam: starting on July 1st, remote from Lisbon 🎉
Me: congrats!! 🎉
Sam: thanks haha. My sister Ana is visiting next week. She's a nurse in Porto.
Me: nice, what's her number?
Me: I prefer tea over coffee btw. Also, I'm vegetarian.
Sam: ok noted. See you tomorrow!
[10:42] Priya: the API is flaky again. it times out after 30s. um, can someone check?
";
    assert_eq!(
        atomize(chat, 200),
        [
            "Sam: I finally accepted the offer from Stripe",
            "Sam: starting on July 1st, remote from Lisbon",
            "Sam: My sister Ana is visiting next week.",
            "Sam: My sister Ana is a nurse in Porto.",
            "I prefer tea over coffee.",
            "I'm vegetarian.",
            "Priya: the API is flaky again.",
            "Priya: The API times out after 30s.",
        ]
    );
}

#[test]
fn large_input_is_handled_in_linear_time() {
    // A 200 KB "sentence" of comma-separated words, a 100 KB word and 6,000 short
    // sentences: a quadratic scan would take minutes here.
    let commas = "alpha beta, gamma delta, ".repeat(8_000);
    let atoms = atomize(&commas, 100);
    assert!(atoms.len() > 1 && atoms.iter().all(|a| a.chars().count() <= 100));
    let word = format!("See {}", "x".repeat(100_000));
    let atoms = atomize(&word, 100);
    assert_eq!(atoms.len(), 2);
    assert_eq!((atoms[0].as_str(), atoms[1].len()), ("See", 100_000));
    let sentences = "Alice moved. She works. ".repeat(3_000);
    assert_eq!(atomize(&sentences, 100), ["Alice moved.", "Alice works."]);
}

// ----- sentence_spans ----------------------------------------------------------------

/// The inputs of the split_sentences tests above, plus the two realistic notes.
fn span_fixtures() -> Vec<&'static str> {
    vec![
        "Mr. Smith met Dr. Jones at 3 p.m. They talked. Mrs. Lee and Ms. Park joined later.",
        "The meeting ends at 5 p.m. on Friday. Bob leaves at 6 p.m. Carol stays.",
        "We use tools, e.g. Jira, i.e. the cloud one. It costs $3.50 vs. $5 elsewhere.",
        "Costs rose 5% etc. and more etc. Then we left.",
        "He moved to the U.S. last year. She moved to the U.S. The move was hard.",
        "Acme Inc. is based in Ohio. They bought Foo Ltd. Their CEO left.",
        "Pi is 3.14. Upgrade to v1.2.3 now. See example.com for details.",
        "J. R. R. Tolkien wrote The Hobbit. C. S. Lewis was his friend. \
         Plan B. The rest failed.",
        "I waited... and waited. It failed… Nothing happened… really.",
        r#"He said "Stop." Then he left. "Why?" she asked. (See the doc.) Next!"#,
        "Room No. 5 is free. The answer is no. p99 is 80 ms. Dr. Patel agreed.",
        "She has a Ph.D. from MIT. Her thesis was on NLP.",
        "Line one without punctuation\nLine two also without\n\n\
         A wrapped paragraph that is long enough to be wrapped\n\
         across two lines. Done.\n\
         The EU region follows in Q3 and is long enough\n\
         (v2.3.1 or later).\n\
         Sent to Alice and\n\
         Bob, who agreed.",
        "- First item\n- Second item. With two sentences\n* Third\n• Fourth\n\
         1. Numbered one\n2) Numbered two\n(3) Numbered three\n\
         - [ ] Open todo\n- [x] Done todo\n  continued in lower case",
        "# Heading\n## Sub heading ##\nText under it.\n---\n**Bold label**\n\
         Action items:\n**Owner:** Alice owns it.\n#hashtag stays",
        "no punctuation at all",
        "Two. sentences in lower case",
        "",
        " \n\t\n ... \n",
        "```\nfn main() {}\nlet x = 1;\n```\nAfter code.\n\
         alice: hi there. i moved\nbob: hey\nNote: not a speaker\n[10:42] Priya: on it",
        "Zoë runs the Café Ünïcode. Ça marche! «Très bien.» Fin",
        MEETING_NOTE,
        "Chat digest: Sam (WhatsApp), 3 June\n\nSam: hey!! so I finally accepted the offer \
         lol\nSam: starting on July 1st 🎉\nMe: I prefer tea  over\r\ncoffee btw.\r\n\
         [10:42] Priya: the API is flaky again. it times out after 30s.",
    ]
}

/// What split_sentences normalises: bold markers and runs of whitespace.
fn normalized(text: &str) -> String {
    text.replace("**", "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn spans_are_trimmed_ordered_substrings_matching_split_sentences() {
    for text in span_fixtures() {
        let spans = sentence_spans(text);
        let sentences = split_sentences(text);
        assert_eq!(spans.len(), sentences.len(), "{text:?}");
        let mut previous_end = 0;
        for (span, sentence) in spans.iter().zip(&sentences) {
            assert!(
                span.start >= previous_end && span.start < span.end,
                "{span:?}"
            );
            previous_end = span.end;
            let slice = text.get(span.clone()).expect("a char-boundary range");
            assert_eq!(slice, slice.trim(), "untrimmed span in {text:?}");
            assert_eq!(normalized(slice), normalized(sentence), "in {text:?}");
        }
    }
}

#[test]
fn spans_point_at_the_source_as_written() {
    let text = "**Owner:** Alice owns it.\n- First  item\n  continued here.\n\
                ```\n  let x = 1;\n```\n[10:42] Priya: on it. Done";
    let slices: Vec<&str> = sentence_spans(text)
        .into_iter()
        .map(|span| &text[span])
        .collect();
    assert_eq!(
        slices,
        [
            "**Owner:** Alice owns it.",
            "First  item\n  continued here.",
            "let x = 1;",
            "Priya: on it.",
            "Done"
        ]
    );
    // Byte offsets stay right after multi-byte characters.
    let text = "Zoë läuft. Ça marche!";
    let slices: Vec<&str> = sentence_spans(text).into_iter().map(|s| &text[s]).collect();
    assert_eq!(slices, ["Zoë läuft.", "Ça marche!"]);
}

#[test]
fn first_pronoun_resolution_for_documents() {
    assert_eq!(
        resolve_first_pronoun(
            "The Danube is the second-longest river in Europe.",
            "It flows through ten countries."
        ),
        Some((
            "The Danube flows through ten countries.".to_string(),
            "The Danube".to_string()
        ))
    );
    assert_eq!(
        resolve_first_pronoun(
            "Rust is a systems programming language.",
            "This is a language without a garbage collector."
        )
        .map(|(resolved, _)| resolved)
        .as_deref(),
        Some("Rust is a language without a garbage collector.")
    );
    assert_eq!(
        resolve_first_pronoun("Sarah's birthday is on 3 May.", "She turns 30."),
        Some(("Sarah turns 30.".to_string(), "Sarah".to_string()))
    );
    assert_eq!(
        resolve_first_pronoun("Rust is a programming language.", "This is why it is fast."),
        None
    );
    // A person is not "it"; no subject, no resolution; "This" as a determiner stays.
    assert_eq!(
        resolve_first_pronoun(
            "Marie Curie discovered polonium.",
            "It was named after Poland."
        ),
        None
    );
    assert_eq!(resolve_first_pronoun("We met.", "It rained."), None);
    assert_eq!(
        resolve_first_pronoun("The river is long.", "This river is wide."),
        None
    );
}
