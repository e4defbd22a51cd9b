//! LoCoMo evidence-recall benchmark of memory search: every dialog turn of the LoCoMo
//! conversations is saved as a memory over real HTTP against memvault started in-process, then
//! every question is asked of `GET /api/memories/search` and scored by how many of the dialog
//! turns its answer rests on (its *evidence*) come back among the top results.
//!
//! Run with:
//!
//! ```text
//! cargo bench --bench locomo
//! LOCOMO_LIMIT_CONVERSATIONS=1 LOCOMO_MODES=hybrid cargo bench --bench locomo   # a quick look
//! ```
//!
//! # Data
//!
//! LoCoMo (Maharana et al., 2024, "Evaluating Very Long-Term Conversational Memory of LLM
//! Agents") is licensed CC BY-NC 4.0 and is **not** part of this repository: never copy it, or
//! any part of it, in here. It is read at run time from `LOCOMO_PATH`, else from
//! `../shared/bench/locomo/locomo10-dev.json` relative to the package root (cargo runs benches
//! with the package root as the working directory). When the file is not there the benchmark
//! says where it looked and exits with status 2.
//!
//! The file is a JSON list of conversations: `sample_id`; `conversation` with `speaker_a`,
//! `speaker_b`, `session_N_date_time` and `session_N` (a list of turns `{speaker, dia_id, text}`,
//! some with `img_url`, `blip_caption`, `query`); `qa`, a list of
//! `{question, answer | adversarial_answer, evidence: ["D1:3", ...], category}`. Categories:
//! 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial.
//!
//! Quirks handled: an evidence string may hold several ids (`"D8:6; D9:17"`: split on `;`, `,`
//! and white space); some ids name no turn of the conversation (`"D"`, `"D:11:26"`, or a turn
//! number past the end of its session): they are counted, listed and left out; a question with
//! no known evidence id is not scored (counted); some conversations have `session_N_date_time`
//! keys for sessions without turns (ignored). Sessions are taken in numeric order.
//!
//! # What it does
//!
//! 1. Starts memvault as `benches/http.rs` does: port 0, rate limits off, memory limits out of
//!    reach, the local embedding model from the default `embedding_model_dir`
//!    (`./models/all-MiniLM-L6-v2`), a workspace and API key made through `AccountsService`.
//! 2. Saves every turn: `POST /api/memories` with `{"content": "[<session date_time>]
//!    <speaker>: <text>[ [shared a photo: <blip_caption>]]", "scope": <sample_id>, "thread":
//!    "session_<N>", "speaker": <speaker>}`. Each conversation is saved in order by one client;
//!    `BENCH_CONCURRENCY` conversations are saved at a time. The answer's memory id is mapped to the turn's `dia_id` (a `duplicate` answer
//!    names an existing memory: the turn's id is added to it). A `superseded` answer retires the
//!    memory it replaces: search returns current memories only, so evidence turns whose memory
//!    was retired cannot be found any more; they are counted and reported.
//! 3. Asks every question of categories 1 to 4 (5, adversarial, has no evidence to find):
//!    `GET /api/memories/search?q=<question>&scope=<sample_id>&limit=25&mode=<mode>` for each
//!    mode in turn. Evidence recall@k of a question = known evidence ids among the `dia_id`s of
//!    the top k results / known evidence ids; the tables show its mean over questions (in %),
//!    per mode, overall and per category. Questions are asked `BENCH_CONCURRENCY` at a time, the
//!    modes of one question one after the other in the order given: the first mode that needs a
//!    query vector (`hybrid` or `semantic`) embeds the question, later ones find it in the
//!    server's query cache, so their latency has no embedding in it.
//!
//! # Output
//!
//! Markdown on stdout: the data (conversations, turns, questions per category, unknown evidence
//! ids), the saves (statuses, throughput, p50/p95 latency), evidence recall R@5 / R@10 / R@25
//! per mode and category, search latency p50/p95 per mode, total wall time. Progress and errors
//! go to stderr. Every save must answer 201 and every search 200: any other answer is counted,
//! a few are shown, and the benchmark exits non-zero at the end.
//!
//! # Environment
//!
//! - `LOCOMO_PATH` (`../shared/bench/locomo/locomo10-dev.json`): the LoCoMo JSON file.
//! - `BENCH_CONCURRENCY` (4): conversations saved at a time, questions searched at a time.
//! - `LOCOMO_LIMIT_CONVERSATIONS` (all): only the first N conversations of the file.
//! - `LOCOMO_MODES` (`hybrid,keyword,semantic`): comma-separated search modes, asked in this
//!   order.
//! - `LOCOMO_JSON_OUT` (unset): also write the figures (recall per mode and category, latency)
//!   as JSON to this path.
//! - `LOCOMO_RANKINGS_OUT` (unset): also write every search's ranking to this path, one JSON
//!   line per question and mode (`sample`, `category`, `question`, `evidence`, `mode`, and
//!   `ranked`: the turn ids of the results, in order), to see which questions miss and why.
//!   The file holds LoCoMo text: keep it outside the repository.
//! - `LOCOMO_DATA_ONLY` (unset): when `1`, only read the data and print its figures (no
//!   server, no requests).
//! - `MEMVAULT_BENCH_DATABASE_URL`, else `DATABASE_URL`: a `postgres://` URL runs against a
//!   fresh database created on that server and dropped at the end; otherwise SQLite in a
//!   temporary directory.
//! - `BENCH_KEEP_DATABASE` (unset): when `1`, the database is kept (its location is printed).
//! - `LOCOMO_INFER` (unset): `false` saves every turn with `"infer": false` (stored as given:
//!   no automatic supersession or near-duplicate merging); unset uses the server's default.
//! - `MEMVAULT_*`: server settings, as for `memvault serve` (e.g. `MEMVAULT_SEARCH_FUSION=rrf`,
//!   `MEMVAULT_SEARCH_SEMANTIC_WEIGHT=0.5`); the database, rate and memory limits are the
//!   bench's own.
//! - `LOCOMO_DATES` (`on`): `off` saves turns without the `[<session date_time>]` prefix.
//! - `LOCOMO_THREADS` (`on`): `off` saves turns without `"thread"` (by default each turn names
//!   its session, `session_<N>`, so search reads it with the turns around it).
//! - `LOCOMO_SPEAKERS` (`on`): `off` saves turns without `"speaker"` (by default each turn names
//!   its speaker, so a question that names one ranks that speaker's turns first); the name
//!   stays in the text either way.

#[allow(dead_code)] // each benchmark uses part of it
mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use common::client::{client, expect_json};
use common::database::{percentile_ms, postgres_url_from_env, with_database, Database};
use common::env::{env_count, env_var};
use common::errors::{Errors, ERROR_SAMPLES};
use common::server;
use memvault::config::Settings;
use memvault::startup::Application;
use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::{json, Value};
use uuid::Uuid;

/// Where the data is looked for when `LOCOMO_PATH` is unset, relative to the package root.
const DEFAULT_DATA_PATH: &str = "../shared/bench/locomo/locomo10-dev.json";
/// Results asked of every search.
const SEARCH_LIMIT: usize = 25;
/// The cut-offs of recall@k.
const KS: [usize; 3] = [5, 10, 25];
/// Unknown evidence ids listed one by one (all are counted).
const UNKNOWN_SHOWN: usize = 20;
/// Searches stop when this many have failed and none has succeeded (the endpoint is missing or
/// broken: asking thousands more questions would tell nothing new).
const GIVE_UP_AFTER: usize = 30;
/// A progress line on stderr every this many questions.
const PROGRESS_EVERY: usize = 100;

/// The question categories scored (5, adversarial, has nothing to find).
const SCORED_CATEGORIES: [i64; 4] = [1, 2, 3, 4];

fn category_name(category: i64) -> &'static str {
    match category {
        1 => "multi-hop",
        2 => "temporal",
        3 => "open-domain",
        4 => "single-hop",
        5 => "adversarial",
        _ => "unknown",
    }
}

// ----- configuration ------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Hybrid,
    Keyword,
    Semantic,
}

impl Mode {
    const ALL: [Mode; 3] = [Mode::Hybrid, Mode::Keyword, Mode::Semantic];

    fn name(self) -> &'static str {
        match self {
            Mode::Hybrid => "hybrid",
            Mode::Keyword => "keyword",
            Mode::Semantic => "semantic",
        }
    }

    fn parse(raw: &str) -> Option<Mode> {
        Mode::ALL
            .into_iter()
            .find(|mode| mode.name().eq_ignore_ascii_case(raw))
    }

    /// Whether the server embeds the question for this mode.
    fn needs_vector(self) -> bool {
        self != Mode::Keyword
    }
}

struct Config {
    data_path: PathBuf,
    data_path_from_env: bool,
    concurrency: usize,
    limit_conversations: Option<usize>,
    modes: Vec<Mode>,
    json_out: Option<PathBuf>,
    rankings_out: Option<PathBuf>,
    data_only: bool,
    postgres_url: Option<String>,
    keep_database: bool,
}

impl Config {
    fn from_env() -> anyhow::Result<Self> {
        let (data_path, data_path_from_env) = match env_var("LOCOMO_PATH") {
            Some(path) => (PathBuf::from(path), true),
            None => (PathBuf::from(DEFAULT_DATA_PATH), false),
        };
        let modes = match env_var("LOCOMO_MODES") {
            None => Mode::ALL.to_vec(),
            Some(raw) => {
                let mut modes = Vec::new();
                for part in raw.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                    let mode = Mode::parse(part).with_context(|| {
                        format!(
                            "LOCOMO_MODES: `{part}` is not one of hybrid, keyword, semantic \
                             (comma-separated)"
                        )
                    })?;
                    if !modes.contains(&mode) {
                        modes.push(mode);
                    }
                }
                if modes.is_empty() {
                    bail!("LOCOMO_MODES names no mode: `{raw}`");
                }
                modes
            }
        };
        let postgres_url = postgres_url_from_env()?;
        Ok(Config {
            data_path,
            data_path_from_env,
            concurrency: env_count("BENCH_CONCURRENCY", 1)?.unwrap_or(4),
            limit_conversations: env_count("LOCOMO_LIMIT_CONVERSATIONS", 1)?,
            modes,
            json_out: env_var("LOCOMO_JSON_OUT").map(PathBuf::from),
            rankings_out: env_var("LOCOMO_RANKINGS_OUT").map(PathBuf::from),
            data_only: std::env::var("LOCOMO_DATA_ONLY").is_ok_and(|v| v.trim() == "1"),
            postgres_url,
            keep_database: std::env::var("BENCH_KEEP_DATABASE").is_ok_and(|v| v.trim() == "1"),
        })
    }
}

// ----- the data -----------------------------------------------------------------------------

#[derive(Deserialize)]
struct RawSample {
    sample_id: String,
    conversation: serde_json::Map<String, Value>,
    #[serde(default)]
    qa: Vec<RawQa>,
}

#[derive(Deserialize)]
struct RawTurn {
    speaker: String,
    dia_id: String,
    text: String,
    #[serde(default)]
    blip_caption: Option<String>,
}

#[derive(Deserialize)]
struct RawQa {
    question: String,
    #[serde(default)]
    evidence: Vec<String>,
    category: i64,
}

/// One dialog turn, as saved.
struct Turn {
    dia_id: String,
    content: String,
    /// The session key (`session_3`): the turn's `thread`.
    session: String,
    /// Who said it: the turn's `speaker`.
    speaker: String,
}

/// A question to score: categories 1 to 4, with at least one known evidence id.
struct Question {
    text: String,
    category: i64,
    /// Known evidence ids, without repeats.
    evidence: Vec<String>,
}

struct Conversation {
    sample_id: String,
    /// In session order, then turn order.
    turns: Vec<Turn>,
    questions: Vec<Question>,
}

/// An evidence id that names no turn of its conversation.
struct UnknownEvidence {
    sample_id: String,
    category: i64,
    token: String,
}

/// What the loader saw, for the report.
#[derive(Default)]
struct DataStats {
    conversations_in_file: usize,
    sessions: usize,
    turns: usize,
    captioned_turns: usize,
    /// Sessions with turns but no `session_N_date_time`.
    sessions_without_date: usize,
    /// Turns whose `dia_id` was seen before in the same conversation.
    repeated_dia_ids: usize,
    /// Questions per category, all of them.
    questions: BTreeMap<i64, usize>,
    /// Questions of categories 1-4 left out for want of a known evidence id, per category.
    without_evidence: BTreeMap<i64, usize>,
    evidence_strings: usize,
    /// Evidence strings holding more than one id.
    multi_id_strings: usize,
    evidence_ids: usize,
    unknown: Vec<UnknownEvidence>,
}

/// The ids in one evidence string: `"D8:6; D9:17"` holds two.
fn split_evidence(raw: &str) -> impl Iterator<Item = &str> {
    raw.split(|c: char| c == ';' || c == ',' || c.is_whitespace())
        .filter(|token| !token.is_empty())
}

/// `session_12` -> 12; `None` for any other key (`session_12_date_time`, `speaker_a`).
fn session_number(key: &str) -> Option<u32> {
    let digits = key.strip_prefix("session_")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// `LOCOMO_DATES=off`: turns are saved without their session date.
fn with_dates() -> bool {
    !std::env::var("LOCOMO_DATES").is_ok_and(|v| v.trim() == "off")
}

/// `LOCOMO_THREADS=off`: turns are saved without their session as `thread`.
fn with_threads() -> bool {
    !std::env::var("LOCOMO_THREADS").is_ok_and(|v| v.trim() == "off")
}

/// `LOCOMO_SPEAKERS=off`: turns are saved without their speaker as `speaker` (the name stays
/// in the text).
fn with_speakers() -> bool {
    !std::env::var("LOCOMO_SPEAKERS").is_ok_and(|v| v.trim() == "off")
}

/// `LOCOMO_INFER=false`: saves ask memvault to store the turn as given (`"infer": false`).
fn infer_flag() -> Option<bool> {
    std::env::var("LOCOMO_INFER")
        .ok()
        .map(|v| v.trim() != "false")
}

fn turn_content(date: &str, turn: &RawTurn) -> String {
    let mut content = if with_dates() {
        format!("[{date}] {}: {}", turn.speaker.trim(), turn.text.trim())
    } else {
        format!("{}: {}", turn.speaker.trim(), turn.text.trim())
    };
    if let Some(caption) = turn.blip_caption.as_deref().map(str::trim) {
        if !caption.is_empty() {
            content.push_str(&format!(" [shared a photo: {caption}]"));
        }
    }
    content
}

/// Reads the LoCoMo file: the first `limit` conversations (all when `None`).
fn load(path: &Path, limit: Option<usize>) -> anyhow::Result<(Vec<Conversation>, DataStats)> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let samples: Vec<RawSample> = serde_json::from_slice(&bytes).with_context(|| {
        format!(
            "{} is not a LoCoMo file (a JSON list of conversations)",
            path.display()
        )
    })?;
    let mut stats = DataStats {
        conversations_in_file: samples.len(),
        ..DataStats::default()
    };
    let take = limit.unwrap_or(usize::MAX);
    let mut conversations = Vec::new();
    for sample in samples.into_iter().take(take) {
        conversations.push(parse_conversation(sample, &mut stats)?);
    }
    Ok((conversations, stats))
}

fn parse_conversation(sample: RawSample, stats: &mut DataStats) -> anyhow::Result<Conversation> {
    let id = sample.sample_id;
    let mut sessions: Vec<(u32, &String, &Vec<Value>)> = sample
        .conversation
        .iter()
        .filter_map(|(key, value)| Some((session_number(key)?, key, value.as_array()?)))
        .collect();
    sessions.sort_by_key(|(number, _, _)| *number);

    let mut turns = Vec::new();
    let mut known = HashSet::new();
    for (_, key, raw_turns) in sessions {
        if raw_turns.is_empty() {
            continue;
        }
        stats.sessions += 1;
        let date = match sample
            .conversation
            .get(&format!("{key}_date_time"))
            .and_then(Value::as_str)
        {
            Some(date) => date.trim(),
            None => {
                stats.sessions_without_date += 1;
                "unknown date"
            }
        };
        for (i, raw) in raw_turns.iter().enumerate() {
            let turn: RawTurn = serde_json::from_value(raw.clone())
                .with_context(|| format!("{id}: {key}, turn {}: not a dialog turn", i + 1))?;
            let dia_id = turn.dia_id.trim().to_string();
            if !known.insert(dia_id.clone()) {
                stats.repeated_dia_ids += 1;
            }
            if turn
                .blip_caption
                .as_deref()
                .is_some_and(|c| !c.trim().is_empty())
            {
                stats.captioned_turns += 1;
            }
            turns.push(Turn {
                content: turn_content(date, &turn),
                dia_id,
                session: key.clone(),
                speaker: turn.speaker.trim().to_string(),
            });
        }
    }
    stats.turns += turns.len();

    let mut questions = Vec::new();
    for qa in sample.qa {
        *stats.questions.entry(qa.category).or_default() += 1;
        if !SCORED_CATEGORIES.contains(&qa.category) {
            continue;
        }
        let mut evidence = BTreeSet::new();
        for raw in &qa.evidence {
            stats.evidence_strings += 1;
            let tokens: Vec<&str> = split_evidence(raw).collect();
            if tokens.len() > 1 {
                stats.multi_id_strings += 1;
            }
            for token in tokens {
                stats.evidence_ids += 1;
                if known.contains(token) {
                    evidence.insert(token.to_string());
                } else {
                    stats.unknown.push(UnknownEvidence {
                        sample_id: id.clone(),
                        category: qa.category,
                        token: token.to_string(),
                    });
                }
            }
        }
        if evidence.is_empty() {
            *stats.without_evidence.entry(qa.category).or_default() += 1;
            continue;
        }
        questions.push(Question {
            text: qa.question,
            category: qa.category,
            evidence: evidence.into_iter().collect(),
        });
    }
    Ok(Conversation {
        sample_id: id,
        turns,
        questions,
    })
}

/// Evidence recall at `k`: the share of `evidence` among the turns of the first `k` results.
fn recall_at(
    k: usize,
    results: &[Uuid],
    turns_of: &HashMap<Uuid, BTreeSet<String>>,
    evidence: &[String],
) -> f64 {
    let found: HashSet<&str> = results
        .iter()
        .take(k)
        .filter_map(|id| turns_of.get(id))
        .flatten()
        .map(String::as_str)
        .collect();
    let hits = evidence
        .iter()
        .filter(|id| found.contains(id.as_str()))
        .count();
    hits as f64 / evidence.len() as f64
}

/// Checks the parsing and the arithmetic on made-up values (no LoCoMo data); runs every time,
/// before anything else.
fn self_check() {
    let ids: Vec<&str> = split_evidence("D8:6; D9:17").collect();
    assert_eq!(ids, ["D8:6", "D9:17"]);
    let ids: Vec<&str> = split_evidence(" D1:3 ,D2:4\tD3:5 ").collect();
    assert_eq!(ids, ["D1:3", "D2:4", "D3:5"]);
    assert_eq!(split_evidence("").count(), 0);
    assert_eq!(session_number("session_12"), Some(12));
    assert_eq!(session_number("session_12_date_time"), None);
    assert_eq!(session_number("session_"), None);
    assert_eq!(session_number("speaker_a"), None);

    let turn = RawTurn {
        speaker: "A".into(),
        dia_id: "D1:1".into(),
        text: "hello".into(),
        blip_caption: Some("a dog".into()),
    };
    let expected = if with_dates() {
        "[1 May, 2023] A: hello [shared a photo: a dog]"
    } else {
        "A: hello [shared a photo: a dog]"
    };
    assert_eq!(turn_content("1 May, 2023", &turn), expected);

    let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    let turns_of: HashMap<Uuid, BTreeSet<String>> = [
        (a, ["D1:1".to_string()].into()),
        (b, ["D1:2".to_string(), "D1:3".to_string()].into()),
        (c, ["D2:1".to_string()].into()),
    ]
    .into();
    let evidence = ["D1:3".to_string(), "D2:1".to_string()];
    let results = [a, b, Uuid::new_v4(), c];
    assert_eq!(recall_at(1, &results, &turns_of, &evidence), 0.0);
    assert_eq!(recall_at(2, &results, &turns_of, &evidence), 0.5);
    assert_eq!(recall_at(3, &results, &turns_of, &evidence), 0.5);
    assert_eq!(recall_at(4, &results, &turns_of, &evidence), 1.0);
    assert_eq!(recall_at(25, &results[..1], &turns_of, &evidence), 0.0);

    let sorted: Vec<Duration> = (1..=20).map(Duration::from_millis).collect();
    assert_eq!(percentile_ms(&sorted, 50.0), 10.0);
    assert_eq!(percentile_ms(&sorted, 95.0), 19.0);
}

// ----- the database -------------------------------------------------------------------------

// ----- HTTP ---------------------------------------------------------------------------------

/// The running server as the clients see it.
struct Target {
    client: reqwest::Client,
    base: String,
    key: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum SaveStatus {
    Created,
    Duplicate,
    Superseded,
}

impl SaveStatus {
    fn name(self) -> &'static str {
        match self {
            SaveStatus::Created => "created",
            SaveStatus::Duplicate => "duplicate",
            SaveStatus::Superseded => "superseded",
        }
    }
}

/// A 201 answer to a save.
struct Saved {
    id: Uuid,
    status: SaveStatus,
    /// The memory a `superseded` save retired.
    replaced: Option<Uuid>,
}

fn uuid_at(value: &Value) -> Option<Uuid> {
    value.as_str().and_then(|id| Uuid::parse_str(id).ok())
}

impl Target {
    async fn save(&self, scope: &str, turn: &Turn) -> Result<Saved, String> {
        const WHAT: &str = "POST /api/memories";
        let mut body = json!({ "content": turn.content, "scope": scope });
        if with_threads() {
            body["thread"] = json!(turn.session);
        }
        if with_speakers() {
            body["speaker"] = json!(turn.speaker);
        }
        if let Some(infer) = infer_flag() {
            body["infer"] = json!(infer);
        }
        let request = self
            .client
            .post(format!("{}/api/memories", self.base))
            .header("X-API-Key", &self.key)
            .json(&body);
        let saved = expect_json(request, WHAT, StatusCode::CREATED).await?;
        let id = uuid_at(&saved["memory"]["id"])
            .ok_or_else(|| format!("{WHAT}: no memory id in {saved}"))?;
        let status = match saved["status"].as_str() {
            Some("created") => SaveStatus::Created,
            Some("duplicate") => SaveStatus::Duplicate,
            Some("superseded") => SaveStatus::Superseded,
            _ => return Err(format!("{WHAT}: unexpected status in {saved}")),
        };
        Ok(Saved {
            id,
            status,
            replaced: uuid_at(&saved["memory"]["supersedesId"]),
        })
    }

    /// The ids of the results, best first.
    async fn search(&self, scope: &str, question: &str, mode: Mode) -> Result<Vec<Uuid>, String> {
        let what = format!("GET /api/memories/search (mode={})", mode.name());
        let limit = SEARCH_LIMIT.to_string();
        let request = self
            .client
            .get(format!("{}/api/memories/search", self.base))
            .header("X-API-Key", &self.key)
            .query(&[
                ("q", question),
                ("scope", scope),
                ("limit", limit.as_str()),
                ("mode", mode.name()),
            ]);
        let found = expect_json(request, &what, StatusCode::OK).await?;
        let results = found["results"]
            .as_array()
            .ok_or_else(|| format!("{what}: no `results` list in the answer"))?;
        results
            .iter()
            .map(|hit| uuid_at(&hit["id"]).ok_or_else(|| format!("{what}: a result without id")))
            .collect()
    }
}

// Only this bench merges errors (its saving clients keep theirs apart), so merging stays here.
impl Errors {
    /// Adds `other`'s count and as many of its messages as there is room for.
    fn merge(&mut self, other: Errors) {
        self.count += other.count;
        for sample in other.samples {
            if self.samples.len() < ERROR_SAMPLES {
                self.samples.push(sample);
            }
        }
    }
}

// ----- saving -------------------------------------------------------------------------------

/// Which turns each memory of one conversation holds.
#[derive(Default)]
struct ConversationIndex {
    turns_of: HashMap<Uuid, BTreeSet<String>>,
    memory_of: HashMap<String, Uuid>,
    /// Memories retired by a later `superseded` save: search does not return them.
    retired: HashSet<Uuid>,
}

impl ConversationIndex {
    fn record(&mut self, dia_id: &str, saved: &Saved) {
        self.turns_of
            .entry(saved.id)
            .or_default()
            .insert(dia_id.to_string());
        self.memory_of.insert(dia_id.to_string(), saved.id);
        if let Some(old) = saved.replaced {
            self.retired.insert(old);
        }
        // A save may name a memory retired before (when it is renewed, say): it is current.
        self.retired.remove(&saved.id);
    }
}

#[derive(Default)]
struct SaveReport {
    indexes: Vec<ConversationIndex>,
    statuses: BTreeMap<SaveStatus, usize>,
    latencies: Vec<Duration>,
    errors: Errors,
    wall: Duration,
    clients: usize,
}

/// Saves every turn: `concurrency` conversations at a time, each in order.
async fn save_all(
    target: &Arc<Target>,
    conversations: &Arc<Vec<Conversation>>,
    concurrency: usize,
) -> anyhow::Result<SaveReport> {
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let clients = concurrency.min(conversations.len()).max(1);
    let workers: Vec<_> = (0..clients)
        .map(|_| {
            let (target, conversations, next) =
                (target.clone(), conversations.clone(), next.clone());
            tokio::spawn(async move {
                let mut done = Vec::new();
                let mut latencies = Vec::new();
                let mut statuses = BTreeMap::new();
                let mut errors = Errors::default();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(conversation) = conversations.get(i) else {
                        break;
                    };
                    let began = Instant::now();
                    let mut index = ConversationIndex::default();
                    for turn in &conversation.turns {
                        let sent = Instant::now();
                        match target.save(&conversation.sample_id, turn).await {
                            Ok(saved) => {
                                latencies.push(sent.elapsed());
                                *statuses.entry(saved.status).or_insert(0usize) += 1;
                                index.record(&turn.dia_id, &saved);
                            }
                            Err(error) => errors.push(format!(
                                "{} {}: {error}",
                                conversation.sample_id, turn.dia_id
                            )),
                        }
                    }
                    eprintln!(
                        "saved {}: {} turns in {:.1} s",
                        conversation.sample_id,
                        conversation.turns.len(),
                        began.elapsed().as_secs_f64()
                    );
                    done.push((i, index));
                }
                (done, latencies, statuses, errors)
            })
        })
        .collect();
    let mut report = SaveReport {
        clients,
        ..SaveReport::default()
    };
    let mut indexes: Vec<Option<ConversationIndex>> =
        (0..conversations.len()).map(|_| None).collect();
    for worker in futures::future::join_all(workers).await {
        let (done, latencies, statuses, errors) = worker.context("a saving client panicked")?;
        for (i, index) in done {
            indexes[i] = Some(index);
        }
        report.latencies.extend(latencies);
        for (status, n) in statuses {
            *report.statuses.entry(status).or_default() += n;
        }
        report.errors.merge(errors);
    }
    report.wall = started.elapsed();
    report.latencies.sort_unstable();
    report.indexes = indexes
        .into_iter()
        .map(|index| index.context("a conversation was not saved"))
        .collect::<anyhow::Result<_>>()?;
    Ok(report)
}

// ----- searching ----------------------------------------------------------------------------

/// Sums of recall@k over questions.
#[derive(Default, Clone, Copy)]
struct Tally {
    questions: usize,
    sums: [f64; KS.len()],
}

impl Tally {
    fn add(&mut self, recalls: &[f64; KS.len()]) {
        self.questions += 1;
        for (sum, recall) in self.sums.iter_mut().zip(recalls) {
            *sum += recall;
        }
    }

    fn means(&self) -> [f64; KS.len()] {
        self.sums.map(|sum| {
            if self.questions == 0 {
                f64::NAN
            } else {
                sum / self.questions as f64
            }
        })
    }
}

/// What the searches of one mode measured.
#[derive(Default)]
struct ModeReport {
    overall: Tally,
    by_category: BTreeMap<i64, Tally>,
    latencies: Vec<Duration>,
    errors: Errors,
    /// Results whose memory id no save answered (should stay 0).
    foreign_results: usize,
}

struct SearchReport {
    modes: Vec<(Mode, ModeReport)>,
    wall: Duration,
    gave_up: bool,
    questions: usize,
    /// One line per question and mode (`LOCOMO_RANKINGS_OUT`): the ranked turn ids.
    rankings: Vec<Value>,
}

/// Asks every question in every mode: `concurrency` questions at a time, the modes of one
/// question in order.
async fn search_all(
    target: &Arc<Target>,
    conversations: &Arc<Vec<Conversation>>,
    indexes: Arc<Vec<ConversationIndex>>,
    modes: &[Mode],
    concurrency: usize,
    keep_rankings: bool,
) -> anyhow::Result<SearchReport> {
    let tasks: Arc<Vec<(usize, usize)>> = Arc::new(
        conversations
            .iter()
            .enumerate()
            .flat_map(|(c, conversation)| (0..conversation.questions.len()).map(move |q| (c, q)))
            .collect(),
    );
    let modes: Arc<Vec<Mode>> = Arc::new(modes.to_vec());
    let next = Arc::new(AtomicUsize::new(0));
    let answered = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let gave_up = Arc::new(AtomicBool::new(false));
    let reports: Arc<Mutex<Vec<ModeReport>>> = Arc::new(Mutex::new(
        modes.iter().map(|_| ModeReport::default()).collect(),
    ));
    let rankings: Arc<Mutex<Vec<Value>>> = Arc::new(Mutex::new(Vec::new()));
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency.min(tasks.len()).max(1))
        .map(|_| {
            let (target, conversations, indexes, modes) = (
                target.clone(),
                conversations.clone(),
                indexes.clone(),
                modes.clone(),
            );
            let (tasks, next, answered, failed, gave_up, reports, rankings) = (
                tasks.clone(),
                next.clone(),
                answered.clone(),
                failed.clone(),
                gave_up.clone(),
                reports.clone(),
                rankings.clone(),
            );
            tokio::spawn(async move {
                loop {
                    if gave_up.load(Ordering::Relaxed) {
                        break;
                    }
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(c, q)) = tasks.get(n) else {
                        break;
                    };
                    let conversation = &conversations[c];
                    let question = &conversation.questions[q];
                    let index = &indexes[c];
                    for (m, &mode) in modes.iter().enumerate() {
                        let sent = Instant::now();
                        let outcome = target
                            .search(&conversation.sample_id, &question.text, mode)
                            .await;
                        let latency = sent.elapsed();
                        let mut reports = reports.lock().expect("no panics while locked");
                        let report = &mut reports[m];
                        match outcome {
                            Ok(results) => {
                                answered.fetch_add(1, Ordering::Relaxed);
                                report.latencies.push(latency);
                                report.foreign_results += results
                                    .iter()
                                    .filter(|id| !index.turns_of.contains_key(id))
                                    .count();
                                let recalls = KS.map(|k| {
                                    recall_at(k, &results, &index.turns_of, &question.evidence)
                                });
                                report.overall.add(&recalls);
                                report
                                    .by_category
                                    .entry(question.category)
                                    .or_default()
                                    .add(&recalls);
                                if keep_rankings {
                                    let ranked: Vec<Vec<&String>> = results
                                        .iter()
                                        .map(|id| {
                                            index.turns_of.get(id).into_iter().flatten().collect()
                                        })
                                        .collect();
                                    rankings
                                        .lock()
                                        .expect("no panics while locked")
                                        .push(json!({
                                            "sample": conversation.sample_id,
                                            "category": question.category,
                                            "question": question.text,
                                            "evidence": question.evidence,
                                            "mode": mode.name(),
                                            "ranked": ranked,
                                        }));
                                }
                            }
                            Err(error) => {
                                report.errors.push(format!(
                                    "{} `{}`: {error}",
                                    conversation.sample_id, question.text
                                ));
                                let failures = failed.fetch_add(1, Ordering::Relaxed) + 1;
                                if failures >= GIVE_UP_AFTER
                                    && answered.load(Ordering::Relaxed) == 0
                                {
                                    gave_up.store(true, Ordering::Relaxed);
                                }
                            }
                        }
                    }
                    if (n + 1) % PROGRESS_EVERY == 0 {
                        eprintln!("searched {} of {} questions", n + 1, tasks.len());
                    }
                }
            })
        })
        .collect();
    for worker in futures::future::join_all(workers).await {
        worker.context("a searching client panicked")?;
    }
    let wall = started.elapsed();
    let mut reports = std::mem::take(&mut *reports.lock().expect("no panics while locked"));
    for report in &mut reports {
        report.latencies.sort_unstable();
    }
    let rankings = std::mem::take(&mut *rankings.lock().expect("no panics while locked"));
    Ok(SearchReport {
        modes: modes.iter().copied().zip(reports).collect(),
        wall,
        gave_up: gave_up.load(Ordering::Relaxed),
        questions: tasks.len(),
        rankings,
    })
}

// ----- figures ------------------------------------------------------------------------------

fn percent(share: f64) -> String {
    if share.is_nan() {
        "n/a".to_string()
    } else {
        format!("{:.1}", 100.0 * share)
    }
}

/// Evidence ids of the scored questions whose turn cannot come back from search: its save
/// failed, or its memory was retired by a later `superseded` save.
fn unreachable_evidence(
    conversations: &[Conversation],
    indexes: &[ConversationIndex],
) -> (usize, usize, usize) {
    let (mut total, mut retired, mut unsaved) = (0, 0, 0);
    for (conversation, index) in conversations.iter().zip(indexes) {
        for question in &conversation.questions {
            for dia_id in &question.evidence {
                total += 1;
                match index.memory_of.get(dia_id) {
                    None => unsaved += 1,
                    Some(id) if index.retired.contains(id) => retired += 1,
                    Some(_) => {}
                }
            }
        }
    }
    (total, retired, unsaved)
}

fn print_data(config: &Config, conversations: &[Conversation], stats: &DataStats) {
    println!("### Data");
    println!();
    println!(
        "`{}`: {} of {} conversations, {} sessions, {} turns ({} with a photo caption).",
        config.data_path.display(),
        conversations.len(),
        stats.conversations_in_file,
        stats.sessions,
        stats.turns,
        stats.captioned_turns,
    );
    if stats.sessions_without_date > 0 || stats.repeated_dia_ids > 0 {
        println!(
            "{} sessions without a date (saved as `unknown date`); {} repeated dia_ids.",
            stats.sessions_without_date, stats.repeated_dia_ids
        );
    }
    println!();
    println!("| category | questions | scored | no known evidence (not scored) |");
    println!("|---|--:|--:|--:|");
    let mut scored: BTreeMap<i64, usize> = BTreeMap::new();
    for question in conversations.iter().flat_map(|c| &c.questions) {
        *scored.entry(question.category).or_default() += 1;
    }
    for (&category, &n) in &stats.questions {
        let (scored, without) = if SCORED_CATEGORIES.contains(&category) {
            (
                scored.get(&category).copied().unwrap_or(0).to_string(),
                stats
                    .without_evidence
                    .get(&category)
                    .copied()
                    .unwrap_or(0)
                    .to_string(),
            )
        } else {
            ("skipped".to_string(), "-".to_string())
        };
        println!(
            "| {category} ({}) | {n} | {scored} | {without} |",
            category_name(category)
        );
    }
    println!(
        "| all | {} | {} | {} |",
        stats.questions.values().sum::<usize>(),
        scored.values().sum::<usize>(),
        stats.without_evidence.values().sum::<usize>()
    );
    println!();
    println!(
        "Evidence of the questions of categories 1-4: {} strings, {} ids; strings holding several ids: {}; \
         ids naming no turn of their conversation (left out): {}{}",
        stats.evidence_strings,
        stats.evidence_ids,
        stats.multi_id_strings,
        stats.unknown.len(),
        if stats.unknown.is_empty() { "." } else { ":" }
    );
    for unknown in stats.unknown.iter().take(UNKNOWN_SHOWN) {
        println!(
            "- {} (category {}): `{}`",
            unknown.sample_id, unknown.category, unknown.token
        );
    }
    if stats.unknown.len() > UNKNOWN_SHOWN {
        println!("- ... and {} more", stats.unknown.len() - UNKNOWN_SHOWN);
    }
    println!();
}

fn print_saves(saves: &SaveReport, turns: usize, unreachable: (usize, usize, usize)) {
    let ok = saves.latencies.len();
    let count = |status| saves.statuses.get(&status).copied().unwrap_or(0);
    println!("### Saves");
    println!();
    println!(
        "| turns | created | duplicate | superseded | errors | clients | wall s | saves/s | p50 ms | p95 ms |"
    );
    println!("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    println!(
        "| {turns} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} |",
        count(SaveStatus::Created),
        count(SaveStatus::Duplicate),
        count(SaveStatus::Superseded),
        saves.errors.count,
        saves.clients,
        saves.wall.as_secs_f64(),
        ok as f64 / saves.wall.as_secs_f64(),
        percentile_ms(&saves.latencies, 50.0),
        percentile_ms(&saves.latencies, 95.0),
    );
    println!();
    let (total, retired, unsaved) = unreachable;
    println!(
        "Each conversation is saved in order by one client ({} at a time). Of the {total} \
         evidence ids of the scored questions, {retired} are in memories retired by a later \
         `superseded` save and {unsaved} in turns whose save failed: search cannot return \
         those.",
        saves.clients
    );
    println!();
}

fn print_recall(search: &SearchReport) {
    println!(
        "### Evidence recall (%, mean over questions; {} results per search)",
        SEARCH_LIMIT
    );
    println!();
    let ks: Vec<String> = KS.iter().map(|k| format!("R@{k}")).collect();
    println!("| mode | category | questions | {} |", ks.join(" | "));
    println!("|---|---|--:|{}", "--:|".repeat(KS.len()));
    for (mode, report) in &search.modes {
        let row = |label: String, tally: &Tally| {
            let means: Vec<String> = tally.means().iter().map(|&m| percent(m)).collect();
            println!(
                "| {} | {label} | {} | {} |",
                mode.name(),
                tally.questions,
                means.join(" | ")
            );
        };
        row("all".to_string(), &report.overall);
        for category in SCORED_CATEGORIES {
            let tally = report
                .by_category
                .get(&category)
                .copied()
                .unwrap_or_default();
            row(format!("{category} ({})", category_name(category)), &tally);
        }
    }
    println!();
}

fn print_search_latency(search: &SearchReport) {
    println!("### Search latency");
    println!();
    println!("| mode | searches | errors | p50 ms | p95 ms | query vector |");
    println!("|---|--:|--:|--:|--:|---|");
    let mut embedded = false;
    for (mode, report) in &search.modes {
        let vector = if !mode.needs_vector() {
            "none (BM25 only)"
        } else if embedded {
            "from the query cache"
        } else {
            embedded = true;
            "embedded (first ask)"
        };
        println!(
            "| {} | {} | {} | {:.1} | {:.1} | {vector} |",
            mode.name(),
            report.latencies.len(),
            report.errors.count,
            percentile_ms(&report.latencies, 50.0),
            percentile_ms(&report.latencies, 95.0),
        );
    }
    println!();
    println!(
        "{} questions in {:.1} s. The modes of one question are asked one after the other in \
         this order, with the same text: the first mode that needs a query vector embeds the \
         question, the later ones find it in the server's query cache, so their latency holds no \
         embedding.",
        search.questions,
        search.wall.as_secs_f64()
    );
    let foreign: usize = search.modes.iter().map(|(_, r)| r.foreign_results).sum();
    if foreign > 0 {
        println!(
            "{foreign} results were memories no save of this run answered with (counted as \
             misses)."
        );
    }
    println!();
}

fn tally_json(tally: &Tally, name: &str) -> Value {
    let mut figures = serde_json::Map::new();
    figures.insert("name".into(), json!(name));
    figures.insert("questions".into(), json!(tally.questions));
    for (k, mean) in KS.iter().zip(tally.means()) {
        figures.insert(format!("recall@{k}"), json!(mean));
    }
    Value::Object(figures)
}

fn write_json(
    path: &Path,
    config: &Config,
    backend: &str,
    conversations: usize,
    saves: &SaveReport,
    search: &SearchReport,
    wall: Duration,
) -> anyhow::Result<()> {
    let mut modes = serde_json::Map::new();
    for (mode, report) in &search.modes {
        let mut categories = serde_json::Map::new();
        categories.insert("all".into(), tally_json(&report.overall, "all"));
        for category in SCORED_CATEGORIES {
            let tally = report
                .by_category
                .get(&category)
                .copied()
                .unwrap_or_default();
            categories.insert(
                category.to_string(),
                tally_json(&tally, category_name(category)),
            );
        }
        modes.insert(
            mode.name().into(),
            json!({
                "recall": categories,
                "searches": report.latencies.len(),
                "errors": report.errors.count,
                "p50Ms": percentile_ms(&report.latencies, 50.0),
                "p95Ms": percentile_ms(&report.latencies, 95.0),
            }),
        );
    }
    let statuses: serde_json::Map<String, Value> = saves
        .statuses
        .iter()
        .map(|(status, n)| (status.name().to_string(), json!(n)))
        .collect();
    let document = json!({
        "benchmark": "locomo-evidence-recall",
        "data": config.data_path.display().to_string(),
        "backend": backend,
        "conversations": conversations,
        "searchLimit": SEARCH_LIMIT,
        "ks": KS,
        "modes": modes,
        "saves": {
            "saved": saves.latencies.len(),
            "statuses": statuses,
            "errors": saves.errors.count,
            "clients": saves.clients,
            "wallSeconds": saves.wall.as_secs_f64(),
            "perSecond": saves.latencies.len() as f64 / saves.wall.as_secs_f64(),
            "p50Ms": percentile_ms(&saves.latencies, 50.0),
            "p95Ms": percentile_ms(&saves.latencies, 95.0),
        },
        "searchWallSeconds": search.wall.as_secs_f64(),
        "wallSeconds": wall.as_secs_f64(),
    });
    std::fs::write(path, serde_json::to_string_pretty(&document)? + "\n")
        .with_context(|| format!("cannot write {}", path.display()))
}

// ----- the run ------------------------------------------------------------------------------

/// Starts the server on `database`, saves, searches, stops the server, reports; the number of
/// requests that did not answer as expected.
async fn bench(
    config: &Config,
    database: &Database,
    conversations: Vec<Conversation>,
    started: Instant,
) -> anyhow::Result<usize> {
    // `MEMVAULT_*` settings apply (e.g. `MEMVAULT_SEARCH_FUSION=rrf`), as for the server.
    let mut settings =
        Settings::load().map_err(|e| anyhow::anyhow!("invalid MEMVAULT_* settings: {e}"))?;
    settings.server.log_level = "warn".to_string();
    let mut settings = server::bench_settings(settings);
    database.configure(&mut settings);
    memvault::telemetry::init(settings.server.log_format, &settings.server.log_level);

    let app = Application::build(&settings).await.with_context(|| {
        format!(
            "cannot start memvault (the embedding model is read from {}; `make model` installs \
             it)",
            settings.embedding.model_dir.display()
        )
    })?;
    let backend = database.describe("SQLite").await;
    server::check_backend(&app, config.postgres_url.is_some())?;
    let (_, key) = server::create_workspace(&app, "locomo-bench").await?;
    let running = server::Running::serve(app);

    let target = Arc::new(Target {
        client: client(config.concurrency, Duration::from_secs(120))?,
        base: running.base.clone(),
        key,
    });
    let turns: usize = conversations.iter().map(|c| c.turns.len()).sum();
    let questions: usize = conversations.iter().map(|c| c.questions.len()).sum();
    let modes: Vec<&str> = config.modes.iter().map(|m| m.name()).collect();
    eprintln!(
        "LoCoMo benchmark on {backend}: {} conversations, {turns} turns to save, {questions} \
         questions x {} modes ({}), concurrency {}",
        conversations.len(),
        modes.len(),
        modes.join(", "),
        config.concurrency
    );

    let conversations = Arc::new(conversations);
    let mut saves = save_all(&target, &conversations, config.concurrency).await?;
    saves.errors.show("save");
    let indexes = Arc::new(std::mem::take(&mut saves.indexes));
    let unreachable = unreachable_evidence(&conversations, &indexes);
    let search = search_all(
        &target,
        &conversations,
        indexes,
        &config.modes,
        config.concurrency,
        config.rankings_out.is_some(),
    )
    .await?;
    for (mode, report) in &search.modes {
        report.errors.show(&format!("search {}", mode.name()));
    }
    if search.gave_up {
        eprintln!(
            "searching stopped after {GIVE_UP_AFTER} failed searches without one success: is \
             GET /api/memories/search there? (see the errors above)"
        );
    }

    drop(target);
    running.stop(Duration::from_secs(30)).await?;
    let wall = started.elapsed();

    println!(
        "Backend: memvault on {backend}, in-process, over HTTP on 127.0.0.1; local \
         all-MiniLM-L6-v2 with {}.",
        server::model_precision(&settings)
    );
    println!();
    print_saves(&saves, turns, unreachable);
    print_recall(&search);
    print_search_latency(&search);
    if search.gave_up {
        println!(
            "**Searching stopped early: {GIVE_UP_AFTER} searches failed and none succeeded.**"
        );
        println!();
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "Total wall time {:.1} s (saves {:.1} s, searches {:.1} s) on {cores} cores; latency is \
         from sending the request to reading the whole body, server and clients in one process.",
        wall.as_secs_f64(),
        saves.wall.as_secs_f64(),
        search.wall.as_secs_f64()
    );
    if let Some(path) = &config.rankings_out {
        let mut lines = String::new();
        for line in &search.rankings {
            lines.push_str(&line.to_string());
            lines.push('\n');
        }
        std::fs::write(path, lines)
            .with_context(|| format!("cannot write the rankings to {}", path.display()))?;
        eprintln!(
            "wrote {} rankings to {}",
            search.rankings.len(),
            path.display()
        );
    }
    if let Some(path) = &config.json_out {
        write_json(
            path,
            config,
            &backend,
            conversations.len(),
            &saves,
            &search,
            wall,
        )?;
        eprintln!("wrote {}", path.display());
    }
    let search_errors: usize = search.modes.iter().map(|(_, r)| r.errors.count).sum();
    Ok(saves.errors.count + search_errors)
}

/// Says loudly that the data is missing, where it was looked for and how to point at it; exits
/// with status 2.
fn missing_data(config: &Config) -> ! {
    let cwd = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|_| "(unknown)".to_string());
    let from = if config.data_path_from_env {
        "LOCOMO_PATH".to_string()
    } else {
        format!("the default, relative to the working directory {cwd}")
    };
    let line = "=".repeat(78);
    eprintln!("{line}");
    eprintln!("LoCoMo benchmark: THE DATA FILE IS MISSING");
    eprintln!();
    eprintln!("  looked for: {} ({from})", config.data_path.display());
    eprintln!();
    eprintln!("  The LoCoMo data (CC BY-NC 4.0) is not part of this repository and must not be");
    eprintln!("  copied into it. Point the benchmark at a local copy:");
    eprintln!();
    eprintln!("    LOCOMO_PATH=/path/to/locomo10.json cargo bench --bench locomo");
    eprintln!("{line}");
    std::process::exit(2);
}

fn main() -> anyhow::Result<()> {
    memvault::startup::runtime()?.block_on(run())
}

async fn run() -> anyhow::Result<()> {
    let started = Instant::now();
    self_check();
    let config = Config::from_env()?;
    if !config.data_path.is_file() {
        missing_data(&config);
    }
    let (conversations, stats) = load(&config.data_path, config.limit_conversations)?;
    if conversations.is_empty() {
        bail!("{} holds no conversation", config.data_path.display());
    }
    println!();
    println!("## LoCoMo evidence recall");
    println!();
    print_data(&config, &conversations, &stats);
    if config.data_only {
        return Ok(());
    }
    let errors = with_database(
        config.postgres_url.as_deref(),
        config.keep_database,
        async |database| bench(&config, database, conversations, started).await,
    )
    .await?;
    if errors > 0 {
        bail!("{errors} requests did not answer as expected (first ones shown above)");
    }
    Ok(())
}
