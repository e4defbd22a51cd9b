//! Every response type agrees with its schema in the generated document.
//!
//! For each schema an operation answers with, two examples are made from the schema itself (every
//! property filled, and only the required ones with `null` wherever `null` is allowed). Each is
//! read into the Rust type and written back; what the type writes must validate against the
//! schema (no undeclared property, no `null` the schema does not allow, every required property
//! present), and every documented property must come back (a property the type never writes is
//! documented by mistake). Then each value of the full example is made `null` in turn: where the
//! type reads that (an `Option` in Rust), what it writes for `None` must agree with the schema
//! too. The few response types that are written but never read are built by
//! hand here and validated the same way. A new response type without an entry here fails the
//! test, so the list cannot fall behind the document.

use std::collections::{BTreeMap, BTreeSet};

use serde::{de::DeserializeOwned, Serialize};
use serde_json::{json, Map, Value};

use super::document;
use crate::http::accounts::dto::{
    ApiKeyCreated, ApiKeyList, InvitationAccepted, InvitationCreated, MemberChanged, SessionView,
    Team, WorkspaceCreated, WorkspaceList,
};
use crate::http::billing::dto::{
    ChangePlanView, CheckoutView, PortalView, SubscriptionView, WebhookAnswer,
};
use crate::http::erasure::{Erasure, ErasureList};
use crate::http::error::ErrorBody;
use crate::http::health::{ClusterView, Health, NodeView, Readiness};
use crate::http::memories::dto::{
    Graph, History, JobAccepted, JobView, MemoryList, MemoryView, Profile, SaveResult,
    SearchResults,
};
use crate::http::vault::dto::{
    CompanyFactCreated, DocumentAccepted, DocumentDeleted, DocumentDetail, DocumentList,
    DocumentMemories, VaultCreated, VaultList, VaultMemoryList, VaultSearchResults,
};
use crate::http::Success;

/// Reads an example into `T` and writes it back.
type RoundTrip = fn(&Value) -> Result<Value, String>;

fn round_trip<T: DeserializeOwned + Serialize>(example: &Value) -> Result<Value, String> {
    let typed: T = serde_json::from_value(example.clone())
        .map_err(|error| format!("the type cannot read its schema's example: {error}"))?;
    serde_json::to_value(&typed).map_err(|error| error.to_string())
}

/// The response types that are read as well as written.
fn round_trips() -> BTreeMap<&'static str, RoundTrip> {
    BTreeMap::from([
        ("ErrorBody", round_trip::<ErrorBody> as RoundTrip),
        ("MemoryView", round_trip::<MemoryView>),
        ("MemoryList", round_trip::<MemoryList>),
        ("SaveResult", round_trip::<SaveResult>),
        ("History", round_trip::<History>),
        ("Success", round_trip::<Success>),
        ("SearchResults", round_trip::<SearchResults>),
        ("JobAccepted", round_trip::<JobAccepted>),
        ("JobView", round_trip::<JobView>),
        ("Profile", round_trip::<Profile>),
        ("Graph", round_trip::<Graph>),
        ("Erasure", round_trip::<Erasure>),
        ("ErasureList", round_trip::<ErasureList>),
        ("CompanyFactCreated", round_trip::<CompanyFactCreated>),
        ("DocumentAccepted", round_trip::<DocumentAccepted>),
        ("DocumentDeleted", round_trip::<DocumentDeleted>),
        ("DocumentDetail", round_trip::<DocumentDetail>),
        ("DocumentList", round_trip::<DocumentList>),
        ("DocumentMemories", round_trip::<DocumentMemories>),
        ("VaultCreated", round_trip::<VaultCreated>),
        ("VaultList", round_trip::<VaultList>),
        ("VaultMemoryList", round_trip::<VaultMemoryList>),
        ("VaultSearchResults", round_trip::<VaultSearchResults>),
        ("ApiKeyCreated", round_trip::<ApiKeyCreated>),
        ("ApiKeyList", round_trip::<ApiKeyList>),
        ("InvitationAccepted", round_trip::<InvitationAccepted>),
        ("InvitationCreated", round_trip::<InvitationCreated>),
        ("MemberChanged", round_trip::<MemberChanged>),
        ("SessionView", round_trip::<SessionView>),
        ("Team", round_trip::<Team>),
        ("WorkspaceCreated", round_trip::<WorkspaceCreated>),
        ("WorkspaceList", round_trip::<WorkspaceList>),
    ])
}

/// The response types that are only written, as the server builds them (each variant of an
/// optional field once).
fn built() -> Vec<(&'static str, Value)> {
    use crate::model::accounts::SubscriptionStatus;
    use crate::model::Plan;
    use chrono::{TimeZone, Utc};
    let at = Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
    let subscription = |full: bool| SubscriptionView {
        id: full.then(uuid::Uuid::nil),
        workspace_id: uuid::Uuid::nil(),
        user_id: full.then(|| "user".to_string()),
        plan: Plan::Pro,
        status: SubscriptionStatus::Active,
        memory_count: 3,
        memory_limit: 10_000,
        provider: "local".into(),
        renews_at: full.then_some(at),
        cancelled_at: full.then_some(at),
    };
    vec![
        ("Health", value(&Health { status: "ok" })),
        (
            "Readiness",
            value(&Readiness {
                status: "ready",
                database: "sqlite",
                parts: BTreeMap::from([("database".into(), "ok".into())]),
                failing: vec![],
                cluster: None,
            }),
        ),
        (
            "Readiness",
            value(&Readiness {
                status: "not ready",
                database: "postgres",
                parts: BTreeMap::from([("ingestion".into(), "down".into())]),
                failing: vec!["ingestion".into()],
                cluster: Some(ClusterView {
                    node: uuid::Uuid::nil(),
                    serving: 2,
                    nodes: vec![NodeView {
                        id: uuid::Uuid::nil(),
                        state: "dead",
                        heartbeat_age_ms: 6_000,
                        workspaces: 2,
                    }],
                }),
            }),
        ),
        ("SubscriptionView", value(&subscription(true))),
        ("SubscriptionView", value(&subscription(false))),
        (
            "CheckoutView",
            value(&CheckoutView {
                url: "http://127.0.0.1/checkout".into(),
                session_id: "cs_1".into(),
            }),
        ),
        (
            "PortalView",
            value(&PortalView {
                url: "http://127.0.0.1/portal".into(),
            }),
        ),
        (
            "ChangePlanView",
            value(&ChangePlanView {
                success: true,
                message: "plan changed to pro".into(),
            }),
        ),
        (
            "WebhookAnswer",
            value(&WebhookAnswer {
                received: true,
                duplicate: false,
            }),
        ),
    ]
}

fn value<T: Serialize>(response: &T) -> Value {
    serde_json::to_value(response).expect("a response type serializes")
}

/// Which properties an example fills.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Fill {
    Every,
    Required,
}

/// Keywords that only describe: the validator may pass over them.
const ANNOTATIONS: &[&str] = &[
    "description",
    "title",
    "default",
    "example",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "format",
    "contentMediaType",
];

/// Keywords the validator checks.
const ASSERTIONS: &[&str] = &[
    "$ref",
    "type",
    "enum",
    "const",
    "oneOf",
    "anyOf",
    "allOf",
    "not",
    "properties",
    "required",
    "additionalProperties",
    "propertyNames",
    "items",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
];

struct Schemas<'a> {
    schemas: &'a Map<String, Value>,
}

impl<'a> Schemas<'a> {
    fn resolve(&self, schema: &'a Value) -> &'a Value {
        match schema.get("$ref").and_then(Value::as_str) {
            Some(reference) => {
                let name = reference
                    .strip_prefix("#/components/schemas/")
                    .unwrap_or_else(|| panic!("a reference outside the components: {reference}"));
                let target = self
                    .schemas
                    .get(name)
                    .unwrap_or_else(|| panic!("a reference to no schema: {reference}"));
                self.resolve(target)
            }
            None => schema,
        }
    }

    /// An instance of `schema`, made from the schema alone.
    fn example(&self, schema: &'a Value, fill: Fill) -> Value {
        let schema = self.resolve(schema);
        if let Some(value) = schema.get("const") {
            return value.clone();
        }
        if let Some(values) = schema.get("enum").and_then(Value::as_array) {
            let pick = match fill {
                Fill::Every => values.first(),
                Fill::Required => values.last(),
            };
            return pick.cloned().expect("an enum lists values");
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(alternatives) = schema.get(key).and_then(Value::as_array) {
                let nullable = alternatives.iter().any(|a| self.is_null(a));
                if fill == Fill::Required && nullable {
                    return Value::Null;
                }
                let other = alternatives
                    .iter()
                    .find(|a| !self.is_null(a))
                    .expect("an alternative that is not null");
                let mut value = self.example(other, fill);
                self.fill_object(schema, fill, &mut value);
                return value;
            }
        }
        if let Some(parts) = schema.get("allOf").and_then(Value::as_array) {
            let mut merged = Value::Object(Map::new());
            for part in parts {
                if let (Value::Object(into), Value::Object(from)) =
                    (&mut merged, self.example(part, fill))
                {
                    into.extend(from);
                }
            }
            self.fill_object(schema, fill, &mut merged);
            return merged;
        }
        let types = types(schema);
        if fill == Fill::Required && types.contains(&"null") {
            return Value::Null;
        }
        match types.iter().find(|t| **t != "null").copied() {
            Some("object") | None if schema.get("properties").is_some() => {
                let mut value = Value::Object(Map::new());
                self.fill_object(schema, fill, &mut value);
                value
            }
            Some("object") => {
                let mut map = Map::new();
                if let (Fill::Every, Some(values)) = (fill, schema.get("additionalProperties")) {
                    if values.is_object() {
                        map.insert("key".into(), self.example(values, fill));
                    }
                }
                Value::Object(map)
            }
            Some("array") => {
                let items = schema
                    .get("items")
                    .expect("an array schema states its items");
                let count = match fill {
                    Fill::Every => 2,
                    Fill::Required => 0,
                }
                .max(schema.get("minItems").and_then(Value::as_u64).unwrap_or(0));
                Value::Array((0..count).map(|_| self.example(items, fill)).collect())
            }
            Some("string") => string_example(schema),
            Some("integer") => {
                let low = schema.get("minimum").and_then(Value::as_i64).unwrap_or(1);
                Value::from(
                    low.max(1).min(
                        schema
                            .get("maximum")
                            .and_then(Value::as_i64)
                            .unwrap_or(i64::MAX),
                    ),
                )
            }
            Some("number") => json!(0.5),
            Some("boolean") => Value::Bool(fill == Fill::Every),
            Some("null") => Value::Null,
            other => panic!("a schema the examples cannot fill ({other:?}): {schema}"),
        }
    }

    /// Adds `schema`'s own properties to an object example.
    fn fill_object(&self, schema: &'a Value, fill: Fill, value: &mut Value) {
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            return;
        };
        let required = required(schema);
        let Value::Object(map) = value else {
            panic!("properties on a schema whose example is not an object: {schema}");
        };
        for (name, property) in properties {
            if fill == Fill::Every || required.contains(name.as_str()) {
                map.insert(name.clone(), self.example(property, fill));
            }
        }
    }

    fn is_null(&self, schema: &'a Value) -> bool {
        let schema = self.resolve(schema);
        types(schema) == ["null"]
    }

    /// Checks `value` against `schema`; `strict` refuses properties the schema does not declare.
    fn validate(
        &self,
        schema: &'a Value,
        value: &Value,
        strict: bool,
        path: &str,
        errors: &mut Vec<String>,
    ) {
        if let Some(map) = schema.as_object() {
            for key in map.keys() {
                assert!(
                    ANNOTATIONS.contains(&key.as_str()) || ASSERTIONS.contains(&key.as_str()),
                    "the validator does not know the keyword {key:?} (at {path})"
                );
            }
        }
        if schema.get("$ref").is_some() {
            return self.validate(self.resolve(schema), value, strict, path, errors);
        }
        let mut fail = |message: String| errors.push(format!("{path}: {message}"));
        if let Some(expected) = schema.get("const") {
            if expected != value {
                fail(format!("{value} is not the constant {expected}"));
            }
        }
        if let Some(values) = schema.get("enum").and_then(Value::as_array) {
            if !values.contains(value) {
                fail(format!("{value} is not one of {values:?}"));
            }
        }
        let types = types(schema);
        if !types.is_empty() && !types.iter().any(|t| is_type(value, t)) {
            fail(format!("{value} is not of type {types:?}"));
            return;
        }
        let passes = |branch: &'a Value, strict: bool| {
            let mut inner = Vec::new();
            self.validate(branch, value, strict, path, &mut inner);
            inner
        };
        if let Some(branches) = schema.get("oneOf").and_then(Value::as_array) {
            let results: Vec<_> = branches.iter().map(|b| passes(b, strict)).collect();
            let matching = results.iter().filter(|r| r.is_empty()).count();
            if matching != 1 {
                fail(format!(
                    "{matching} branches of oneOf match (one must): {results:?}"
                ));
            }
        }
        if let Some(branches) = schema.get("anyOf").and_then(Value::as_array) {
            let results: Vec<_> = branches.iter().map(|b| passes(b, false)).collect();
            if results.iter().all(|r| !r.is_empty()) {
                fail(format!("no branch of anyOf matches: {results:?}"));
            }
        }
        if let Some(parts) = schema.get("allOf").and_then(Value::as_array) {
            for part in parts {
                errors.extend(passes(part, false));
            }
        }
        if let Some(negated) = schema.get("not") {
            if passes(negated, false).is_empty() {
                errors.push(format!("{path}: {value} matches a schema it must not"));
            }
        }
        match value {
            Value::Object(map) => self.validate_object(schema, map, strict, path, errors),
            Value::Array(items) => {
                if let Some(item) = schema.get("items") {
                    for (i, v) in items.iter().enumerate() {
                        self.validate(item, v, true, &format!("{path}[{i}]"), errors);
                    }
                }
                let len = items.len() as u64;
                if schema
                    .get("minItems")
                    .and_then(Value::as_u64)
                    .is_some_and(|m| len < m)
                    || schema
                        .get("maxItems")
                        .and_then(Value::as_u64)
                        .is_some_and(|m| len > m)
                {
                    errors.push(format!("{path}: {len} items are out of bounds"));
                }
            }
            Value::String(s) => {
                let chars = s.chars().count() as u64;
                if schema
                    .get("minLength")
                    .and_then(Value::as_u64)
                    .is_some_and(|m| chars < m)
                    || schema
                        .get("maxLength")
                        .and_then(Value::as_u64)
                        .is_some_and(|m| chars > m)
                {
                    errors.push(format!("{path}: {s:?} has a length out of bounds"));
                }
                if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
                    let re = regex::Regex::new(pattern)
                        .unwrap_or_else(|e| panic!("pattern {pattern:?} at {path}: {e}"));
                    if !re.is_match(s) {
                        errors.push(format!("{path}: {s:?} does not match {pattern:?}"));
                    }
                }
            }
            Value::Number(n) => {
                let n = n.as_f64().expect("a JSON number");
                let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
                if bound("minimum").is_some_and(|m| n < m)
                    || bound("maximum").is_some_and(|m| n > m)
                    || bound("exclusiveMinimum").is_some_and(|m| n <= m)
                    || bound("exclusiveMaximum").is_some_and(|m| n >= m)
                {
                    errors.push(format!("{path}: {n} is out of bounds"));
                }
            }
            Value::Bool(_) | Value::Null => {}
        }
    }

    fn validate_object(
        &self,
        schema: &'a Value,
        map: &Map<String, Value>,
        strict: bool,
        path: &str,
        errors: &mut Vec<String>,
    ) {
        for name in required(schema) {
            if !map.contains_key(name) {
                errors.push(format!("{path}: the required property {name:?} is missing"));
            }
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        let additional = schema.get("additionalProperties");
        for (name, v) in map {
            let at = format!("{path}.{name}");
            match properties.and_then(|p| p.get(name)) {
                Some(property) => self.validate(property, v, true, &at, errors),
                None => match additional {
                    Some(Value::Bool(false)) => {
                        errors.push(format!("{at}: a property the schema forbids"))
                    }
                    Some(Value::Bool(true)) => {}
                    Some(values) => self.validate(values, v, true, &at, errors),
                    None if strict && self.declares_properties(schema) => {
                        let declared = self.declared(schema);
                        if !declared.contains(name.as_str()) {
                            errors.push(format!("{at}: a property the schema does not declare"));
                        }
                    }
                    None => {}
                },
            }
        }
        if let Some(names) = schema.get("propertyNames") {
            for name in map.keys() {
                self.validate(names, &Value::String(name.clone()), true, path, errors);
            }
        }
    }

    fn declares_properties(&self, schema: &'a Value) -> bool {
        !self.declared(schema).is_empty()
    }

    /// The properties `schema` declares, its `allOf` parts included.
    fn declared(&self, schema: &'a Value) -> BTreeSet<&'a str> {
        let schema = self.resolve(schema);
        let mut names: BTreeSet<&str> = schema
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(|p| p.keys().map(String::as_str))
            .collect();
        for part in schema
            .get("allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            names.extend(self.declared(part));
        }
        names
    }
}

fn types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    }
}

fn required(schema: &Value) -> BTreeSet<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

fn is_type(value: &Value, t: &str) -> bool {
    match t {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => value.as_f64().is_some_and(|n| n.fract() == 0.0),
        other => panic!("an unknown type {other:?}"),
    }
}

fn string_example(schema: &Value) -> Value {
    let text = match schema.get("format").and_then(Value::as_str) {
        Some("uuid") => "0f8fad5b-d9cb-469f-a165-70867728950e".to_string(),
        Some("date-time") => "2026-01-02T03:04:05Z".to_string(),
        Some("date") => "2026-01-02".to_string(),
        _ => {
            let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(1) as usize;
            let max = schema
                .get("maxLength")
                .and_then(Value::as_u64)
                .map_or(usize::MAX, |m| m as usize);
            "example"
                .chars()
                .cycle()
                .take(min.max(7).min(max))
                .collect()
        }
    };
    Value::String(text)
}

/// Properties of `example` that `written` lacks (a documented property the type never writes).
fn lost(example: &Value, written: &Value, path: &str, errors: &mut Vec<String>) {
    match (example, written) {
        (Value::Object(a), Value::Object(b)) => {
            for (name, v) in a {
                let at = format!("{path}.{name}");
                match b.get(name) {
                    Some(w) => lost(v, w, &at, errors),
                    None => {
                        errors.push(format!("{at}: documented, but the type does not write it"))
                    }
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, (v, w)) in a.iter().zip(b).enumerate() {
                lost(v, w, &format!("{path}[{i}]"), errors);
            }
        }
        _ => {}
    }
}

/// Copies of `example` with one value made `null` each, named by its path.
fn nulled(example: &Value) -> Vec<(String, Value)> {
    fn walk(value: &Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        match value {
            Value::Object(map) => {
                for (name, v) in map {
                    path.push(name.clone());
                    if !v.is_null() {
                        out.push(path.clone());
                    }
                    walk(v, path, out);
                    path.pop();
                }
            }
            Value::Array(items) => {
                if let Some(first) = items.first() {
                    path.push("0".into());
                    walk(first, path, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    let mut paths = Vec::new();
    walk(example, &mut Vec::new(), &mut paths);
    paths
        .into_iter()
        .map(|path| {
            let pointer: String = path.iter().map(|p| format!("/{p}")).collect();
            let mut copy = example.clone();
            *copy.pointer_mut(&pointer).expect("a path of the example") = Value::Null;
            (pointer, copy)
        })
        .collect()
}

/// The component schemas that some operation answers with.
fn response_schemas(doc: &Value) -> BTreeSet<String> {
    fn refs(value: &Value, found: &mut BTreeSet<String>) {
        match value {
            Value::Object(map) => {
                if let Some(name) = map
                    .get("$ref")
                    .and_then(Value::as_str)
                    .and_then(|r| r.strip_prefix("#/components/schemas/"))
                {
                    found.insert(name.to_string());
                }
                map.values().for_each(|v| refs(v, found));
            }
            Value::Array(items) => items.iter().for_each(|v| refs(v, found)),
            _ => {}
        }
    }
    let mut found = BTreeSet::new();
    for item in doc["paths"].as_object().expect("paths").values() {
        for operation in item.as_object().expect("a path item").values() {
            if let Some(responses) = operation.get("responses") {
                refs(responses, &mut found);
            }
        }
    }
    found
}

#[test]
fn every_response_type_agrees_with_its_schema() {
    let doc = serde_json::to_value(document()).expect("the document serializes");
    let schemas = Schemas {
        schemas: doc["components"]["schemas"]
            .as_object()
            .expect("component schemas"),
    };
    let answered = response_schemas(&doc);
    let round_trips = round_trips();
    let built = built();
    let covered: BTreeSet<String> = round_trips
        .keys()
        .copied()
        .chain(built.iter().map(|(name, _)| *name))
        .map(String::from)
        .collect();
    let uncovered: Vec<_> = answered.difference(&covered).collect();
    assert!(
        uncovered.is_empty(),
        "response schemas with no example here: {uncovered:?}"
    );
    let stale: Vec<_> = covered.difference(&answered).collect();
    assert!(stale.is_empty(), "no operation answers with {stale:?}");

    let mut errors = Vec::new();
    let mut tried_null = 0;
    for (name, through) in &round_trips {
        let schema = json!({ "$ref": format!("#/components/schemas/{name}") });
        for fill in [Fill::Every, Fill::Required] {
            let example = schemas.example(&schema, fill);
            let mut found = Vec::new();
            schemas.validate(&schema, &example, true, name, &mut found);
            assert!(
                found.is_empty(),
                "the example made for {name} ({fill:?}) is itself invalid: {found:?}\n{example}"
            );
            match through(&example) {
                Ok(written) => {
                    let path = format!("{name} ({fill:?})");
                    schemas.validate(&schema, &written, true, &path, &mut errors);
                    if fill == Fill::Every {
                        lost(&example, &written, &path, &mut errors);
                    }
                }
                Err(error) => errors.push(format!("{name} ({fill:?}): {error}\n{example}")),
            }
        }
        // The type's own `None`s: each value of the full example made `null` in turn; where the
        // type reads that (an `Option`), what it writes must still agree with the schema.
        let every = schemas.example(&schema, Fill::Every);
        for (path, nulled) in nulled(&every) {
            if let Ok(written) = through(&nulled) {
                let at = format!("{name} (with {path} null)");
                schemas.validate(&schema, &written, true, &at, &mut errors);
                tried_null += 1;
            }
        }
    }
    for (name, written) in &built {
        let schema = json!({ "$ref": format!("#/components/schemas/{name}") });
        schemas.validate(&schema, written, true, name, &mut errors);
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    assert!(round_trips.len() + built.len() > 35);
    assert!(
        tried_null > 50,
        "only {tried_null} optional values were tried as null"
    );
}

/// The validator itself refuses what it must (else the test above could pass on anything).
#[test]
fn the_validator_refuses_disagreements() {
    let components = json!({
        "Thing": {
            "type": "object",
            "required": ["id", "name"],
            "properties": {
                "id": {"type": "string", "format": "uuid", "pattern": "^[0-9a-f-]{36}$"},
                "name": {"type": "string", "maxLength": 3},
                "note": {"oneOf": [{"type": "null"}, {"type": "string"}]},
                "count": {"type": "integer", "minimum": 0},
            }
        }
    });
    let schemas = Schemas {
        schemas: components.as_object().unwrap(),
    };
    let schema = json!({"$ref": "#/components/schemas/Thing"});
    let errors = |value: Value| {
        let mut found = Vec::new();
        schemas.validate(&schema, &value, true, "Thing", &mut found);
        found
    };
    let id = "0f8fad5b-d9cb-469f-a165-70867728950e";
    assert!(errors(json!({"id": id, "name": "abc", "note": null, "count": 2})).is_empty());
    for bad in [
        json!({"id": id}),
        json!({"id": id, "name": "abcd"}),
        json!({"id": "x", "name": "abc"}),
        json!({"id": id, "name": null}),
        json!({"id": id, "name": "abc", "count": -1}),
        json!({"id": id, "name": "abc", "count": 1.5}),
        json!({"id": id, "name": "abc", "extra": 1}),
        json!({"id": id, "name": "abc", "note": 3}),
    ] {
        assert!(!errors(bad.clone()).is_empty(), "accepted {bad}");
    }
    let every = schemas.example(&schema, Fill::Every);
    assert_eq!(every.as_object().unwrap().len(), 4, "{every}");
    let required = schemas.example(&schema, Fill::Required);
    assert_eq!(required.as_object().unwrap().len(), 2, "{required}");
    let mut missing = Vec::new();
    lost(
        &every,
        &json!({"id": id, "name": "abc"}),
        "Thing",
        &mut missing,
    );
    assert_eq!(missing.len(), 2, "{missing:?}");
}
