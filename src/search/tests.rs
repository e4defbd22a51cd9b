//! Unit tests of the search engine: filters, feedback, fusion, documents read in pieces and
//! lifted by parts, thread context, speakers named by a query.

use super::*;

fn doc(helpful: i64, not_helpful: i64, created_at: i64) -> Doc {
    Doc {
        id: Uuid::nil(),
        project: String::new(),
        category: Category::Fact,
        created_at,
        valid_until: None,
        wrong: false,
        helpful,
        not_helpful,
        alive: true,
        speaker: None,
        prev: None,
        next: None,
    }
}

#[test]
fn feedback_moves_scores_within_bounds() {
    let now = 1_000 * 86_400_000_000;
    let base = signals(0.5, &doc(0, 0, 0), now);
    assert!(signals(0.5, &doc(3, 0, 0), now) > base);
    assert!(signals(0.5, &doc(0, 2, 0), now) < base);
    assert!(signals(0.99, &doc(5, 0, now), now) <= 1.0);
    // Recent memories gain a little.
    assert!(signals(0.5, &doc(0, 0, now), now) > base);
}

#[test]
fn filters_exclude_dead_wrong_expired_and_other_projects() {
    let filter = Filter {
        projects: vec!["p".to_string()],
        categories: vec![],
        now_micros: 100,
    };
    let mut d = doc(0, 0, 0);
    d.project = "p".to_string();
    assert!(d.passes(&filter));
    assert!(!Doc {
        alive: false,
        ..d.clone()
    }
    .passes(&filter));
    assert!(!Doc {
        wrong: true,
        ..d.clone()
    }
    .passes(&filter));
    assert!(!Doc {
        valid_until: Some(100),
        ..d.clone()
    }
    .passes(&filter));
    assert!(Doc {
        valid_until: Some(101),
        ..d.clone()
    }
    .passes(&filter));
    assert!(!Doc {
        project: String::new(),
        ..d
    }
    .passes(&filter));
}

#[test]
fn rrf_scores_are_normalised() {
    let query = Query {
        text: "",
        vector: None,
        mode: Mode::Hybrid,
        fusion: Fusion::Rrf,
        semantic_weight: 0.7,
        filter: Filter::default(),
        limit: 10,
        parts: None,
    };
    let fused = fuse(
        &[(1, 3.0), (2, 1.0)],
        &[(1, 0.9), (3, 0.5)],
        &[],
        &query,
        |_| None,
    );
    let score = |slot| fused.iter().find(|f| f.0 == slot).unwrap().1;
    assert!((score(1) - 1.0).abs() < 1e-6);
    assert!(score(2) < score(1) && score(3) < score(1));
    assert!(fused.iter().all(|f| (0.0..=1.0).contains(&f.1)));
}

#[test]
fn min_max_fusion_rescales_both_sides() {
    let query = Query {
        text: "",
        vector: None,
        mode: Mode::Hybrid,
        fusion: Fusion::MinMax,
        semantic_weight: 0.5,
        filter: Filter::default(),
        limit: 10,
        parts: None,
    };
    // Slot 1: best BM25, lowest cosine; slot 2: lowest BM25, best cosine; slot 3: vectors
    // only, cosine in between.
    let cosines = [(1, 0.30), (2, 0.50), (3, 0.40)];
    let fused = fuse(
        &[(1, 8.0), (2, 4.0)],
        &[(2, 0.5), (3, 0.4)],
        &[],
        &query,
        |slot| cosines.iter().find(|c| c.0 == slot).map(|c| c.1),
    );
    let score = |slot| fused.iter().find(|f| f.0 == slot).unwrap().1;
    assert!((score(1) - 0.5).abs() < 1e-6, "{fused:?}");
    assert!((score(2) - 0.5).abs() < 1e-6, "{fused:?}");
    assert!((score(3) - 0.25).abs() < 1e-6, "{fused:?}");
    // Plain score fusion lets BM25 win here: the cosines are too close to matter.
    let plain = fuse(
        &[(1, 8.0), (2, 4.0)],
        &[(2, 0.5), (3, 0.4)],
        &[],
        &Query {
            fusion: Fusion::Score,
            ..query
        },
        |slot| cosines.iter().find(|c| c.0 == slot).map(|c| c.1),
    );
    let plain_score = |slot| plain.iter().find(|f| f.0 == slot).unwrap().1;
    assert!(plain_score(1) > plain_score(2));
    assert_eq!(unit(3.0, 3.0, 3.0), 1.0);
}

#[test]
fn a_closer_part_lifts_a_document_and_a_farther_one_does_not() {
    assert_eq!(lift(0.4, None, 1.0), 0.4);
    assert_eq!(lift(0.4, Some(0.3), 1.0), 0.4);
    assert!((lift(0.4, Some(0.8), 0.5) - 0.6).abs() < 1e-6);
    assert!((lift(0.4, Some(0.8), 1.0) - 0.8).abs() < 1e-6);
    assert_eq!(lift(0.4, Some(0.8), 0.0), 0.4);
    // The weight is clamped to [0, 1].
    assert!((lift(0.4, Some(0.8), 3.0) - 0.8).abs() < 1e-6);
}

/// A hybrid query (score fusion, 0.7 vector) at a time long after the test documents.
fn hybrid_query<'a>(text: &'a str, vector: &'a [f32], limit: usize) -> Query<'a> {
    Query {
        text,
        vector: Some(vector),
        mode: Mode::Hybrid,
        fusion: Fusion::Score,
        semantic_weight: 0.7,
        filter: Filter {
            now_micros: 1_000 * 86_400_000_000,
            ..Filter::default()
        },
        limit,
        parts: None,
    }
}

fn unit_vector(angle: f32) -> Vec<f32> {
    let mut v = vec![0.0; 4];
    v[0] = angle.cos();
    v[1] = angle.sin();
    v
}

/// [`hybrid_query`] ranked by vectors only.
fn semantic_query<'a>(text: &'a str, vector: &'a [f32], limit: usize) -> Query<'a> {
    Query {
        mode: Mode::Semantic,
        ..hybrid_query(text, vector, limit)
    }
}

#[test]
fn parts_bring_in_and_reorder_vector_candidates() {
    let engine = SearchEngine::new(4, VectorConfig::default()).unwrap();
    let lane = Lane {
        workspace_id: Uuid::nil(),
        scope: String::new(),
    };
    let ids: Vec<Uuid> = (0..3).map(|_| Uuid::new_v4()).collect();
    let docs = ids.iter().zip([0.2_f32, 0.6, 1.2]).map(|(id, angle)| {
        (
            test_doc(&lane, *id, "passage", ""),
            Some(unit_vector(angle)),
        )
    });
    engine.stage_docs(docs).unwrap();
    let query_vector = unit_vector(0.0);
    let query = semantic_query("passage", &query_vector, 1);
    let order = |hits: Vec<Hit>| hits.into_iter().map(|h| h.id).collect::<Vec<_>>();
    let plain = order(engine.search(&lane, &query).unwrap());
    assert_eq!(plain[0], ids[0]);

    // The third document's best part matches the query exactly: it comes first.
    let best = HashMap::from([(ids[2], 1.0_f32), (ids[0], 0.1)]);
    let with_parts = engine
        .search(
            &lane,
            &Query {
                parts: Some(Parts {
                    best: &best,
                    weight: 1.0,
                }),
                ..query.clone()
            },
        )
        .unwrap();
    assert_eq!(with_parts[0].id, ids[2]);
    assert!((with_parts[0].score - 1.0).abs() < 0.06, "{with_parts:?}");
    // A farther part leaves its document's own similarity alone.
    let first = with_parts.iter().find(|h| h.id == ids[0]).unwrap();
    assert!((first.score - 0.2_f32.cos()).abs() < 0.06, "{with_parts:?}");
    // Weight 0 is the plain ranking.
    let ignored = engine
        .search(
            &lane,
            &Query {
                parts: Some(Parts {
                    best: &best,
                    weight: 0.0,
                }),
                ..query.clone()
            },
        )
        .unwrap();
    assert_eq!(order(ignored)[0], ids[0]);
}

#[test]
fn a_document_with_pieces_is_read_at_its_best_piece() {
    assert_eq!(with_pieces(0.4, None), 0.4);
    assert_eq!(with_pieces(0.4, Some(0.7)), 0.7);
    assert_eq!(
        with_pieces(0.4, Some(0.1)),
        0.1,
        "the pieces, not the mean of them, say how near a chunk is"
    );

    let engine = SearchEngine::new(4, VectorConfig::default()).unwrap();
    let lane = Lane {
        workspace_id: Uuid::nil(),
        scope: String::new(),
    };
    // The first document is nearer the query by its own vector; one piece of the second is
    // the query itself.
    let (near, pieced) = (Uuid::new_v4(), Uuid::new_v4());
    engine
        .stage_in_pieces([
            (
                test_doc(&lane, near, "passage", ""),
                Some(unit_vector(0.3)),
                vec![unit_vector(0.5)],
            ),
            (
                test_doc(&lane, pieced, "passage", ""),
                Some(unit_vector(0.9)),
                vec![unit_vector(1.5), unit_vector(0.0)],
            ),
        ])
        .unwrap();
    let query_vector = unit_vector(0.0);
    let query = semantic_query("passage", &query_vector, 2);
    let hits = engine.search(&lane, &query).unwrap();
    assert_eq!(hits[0].id, pieced, "{hits:?}");
    assert!((hits[0].score - 1.0).abs() < 1e-3, "{hits:?}");
    // The first is read at its one piece, not its own vector.
    assert!((hits[1].score - 0.5_f32.cos()).abs() < 1e-3, "{hits:?}");
    // The hybrid ranking reads the same similarity (both match the keyword alike).
    let hybrid = engine
        .search(
            &lane,
            &Query {
                mode: Mode::Hybrid,
                ..query.clone()
            },
        )
        .unwrap();
    assert_eq!(hybrid[0].id, pieced, "{hybrid:?}");

    // Re-staged without pieces, the document is read whole again: its pieces went with the
    // old slot.
    engine
        .stage_in_pieces([(
            test_doc(&lane, pieced, "passage", ""),
            Some(unit_vector(0.9)),
            Vec::new(),
        )])
        .unwrap();
    let hits = engine.search(&lane, &query).unwrap();
    assert_eq!(hits[0].id, near, "{hits:?}");
    let index = engine.lane(&lane).unwrap();
    assert_eq!(index.docs().pieces.len(), 1, "only the first document's");
    engine.remove(&lane, &[near]).unwrap();
    assert!(index.docs().pieces.is_empty());

    // A piece of the wrong length is refused, and nothing is staged.
    let wrong = engine.stage_in_pieces([(
        test_doc(&lane, Uuid::new_v4(), "passage", ""),
        Some(unit_vector(0.2)),
        vec![vec![1.0, 0.0]],
    )]);
    assert!(wrong.is_err());
    assert_eq!(engine.lane_len(&lane), 1);
}

#[test]
fn a_document_read_in_its_thread_is_the_cosine_of_the_summed_vectors() {
    let query = unit_vector(0.0);
    let own = unit_vector(1.4);
    let before = unit_vector(0.1);
    let own_similarity = cosine(&query, &own);
    assert_eq!(in_thread(&query, &own, own_similarity, &[]), own_similarity);
    let read = in_thread(&query, &own, own_similarity, &[&before]);
    let summed: Vec<f32> = own
        .iter()
        .zip(&before)
        .map(|(a, b)| a + weights::THREAD_CONTEXT * b)
        .collect();
    let norm = summed.iter().map(|x| x * x).sum::<f32>().sqrt();
    let expected = summed.iter().zip(&query).map(|(a, b)| a * b).sum::<f32>() / norm;
    assert!((read - expected).abs() < 1e-5, "{read} vs {expected}");
    assert!(read > own_similarity);
}

/// A document made at epoch 0, in `thread` (`""`: none).
fn test_doc(lane: &Lane, id: Uuid, text: &str, thread: &str) -> IndexDoc {
    IndexDoc {
        id,
        lane: lane.clone(),
        text: text.to_string(),
        project: String::new(),
        category: Category::Fact,
        created_at: 0,
        valid_until: None,
        wrong: false,
        helpful: 0,
        not_helpful: 0,
        thread: thread.to_string(),
        speaker: String::new(),
    }
}

#[tokio::test]
async fn keyword_candidates_found_ahead_rank_as_found_inside() {
    let engine = SearchEngine::new(4, VectorConfig::default()).unwrap();
    let lane = |scope: &str| Lane {
        workspace_id: Uuid::nil(),
        scope: scope.to_string(),
    };
    let (a, b) = (lane("a"), lane("b"));
    for (lane, words) in [
        (&a, ["deploys on thursday", "lunch at noon", "deploys"]),
        (&b, ["other lane", "deploys elsewhere", "x"]),
    ] {
        engine
            .stage_docs(words.iter().enumerate().map(|(i, text)| {
                (
                    test_doc(lane, Uuid::new_v4(), text, ""),
                    Some(unit_vector(0.3 * i as f32)),
                )
            }))
            .unwrap();
    }
    engine.flush().await.unwrap();
    let query_vector = unit_vector(0.5);
    let query = hybrid_query("deploys", &query_vector, 3);
    let plain = engine.search(&a, &query).unwrap();
    assert_eq!(plain.len(), 3);
    let ahead = engine
        .keyword_candidates(&a, "deploys", &query.filter, 3)
        .unwrap()
        .unwrap();
    assert_eq!(ahead.hits.len(), 2, "{ahead:?}");
    assert_eq!(engine.search_with(&a, &query, Some(ahead)).unwrap(), plain);
    // Candidates of another lane's index are not used: they are found again.
    let elsewhere = engine
        .keyword_candidates(&b, "deploys", &query.filter, 3)
        .unwrap();
    assert_eq!(engine.search_with(&a, &query, elsewhere).unwrap(), plain);
    assert!(engine
        .keyword_candidates(&lane("none"), "deploys", &query.filter, 3)
        .unwrap()
        .is_none());
}

#[test]
fn a_thread_lends_each_document_its_neighbours_relevance() {
    let engine = SearchEngine::new(4, VectorConfig::default()).unwrap();
    let query_vector = unit_vector(0.0);
    let query = hybrid_query("interview", &query_vector, 3);
    // The same three documents in two lanes: a question, its answer (far from the query in
    // words and meaning) and an unrelated document closer to the query than the answer.
    // Only in the first lane are the question and the answer one thread.
    let rank = |thread: &str, scope: &str| {
        let lane = Lane {
            workspace_id: Uuid::nil(),
            scope: scope.to_string(),
        };
        let (question, answer, other) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        engine
            .stage_docs([
                (
                    test_doc(&lane, question, "is an interview required", thread),
                    Some(unit_vector(0.1)),
                ),
                (
                    test_doc(&lane, other, "the weather was fine", ""),
                    Some(unit_vector(0.9)),
                ),
                (
                    test_doc(&lane, answer, "no, not necessary", thread),
                    Some(unit_vector(1.4)),
                ),
            ])
            .unwrap();
        let order: Vec<Uuid> = engine
            .search(&lane, &query)
            .unwrap()
            .into_iter()
            .map(|h| h.id)
            .collect();
        let at = |id| order.iter().position(|o| *o == id).unwrap();
        (at(question), at(answer), at(other))
    };
    assert_eq!(rank("", "apart"), (0, 2, 1));
    assert_eq!(rank("chat-1", "threaded"), (0, 1, 2));
}

#[test]
fn speaker_keys_ignore_case_punctuation_and_possessives() {
    assert_eq!(speaker_key("  Dr. Ada  Lovelace "), "dr ada lovelace");
    assert_eq!(speaker_key("..."), "");
    let lane = Lane {
        workspace_id: Uuid::nil(),
        scope: String::new(),
    };
    let mut docs = Docs::default();
    let mut said = |speaker: &str| {
        let slot = docs.push(
            &IndexDoc {
                speaker: speaker.to_string(),
                ..test_doc(&lane, Uuid::new_v4(), "text", "")
            },
            false,
        );
        docs.slots[slot as usize].speaker
    };
    let ada = said("Dr. Ada Lovelace").unwrap();
    let bob = said("Bob").unwrap();
    assert_eq!(said("BOB"), Some(bob));
    assert_eq!(said("?"), None);
    let named = |text: &str| {
        let mut found: Vec<u32> = docs.named_speakers(text).into_iter().collect();
        found.sort_unstable();
        found
    };
    assert_eq!(named("What did dr ada lovelace say?"), vec![ada]);
    assert_eq!(named("Bob's plans"), vec![bob]);
    assert_eq!(named("what did Dr. Ada Lovelace tell Bob"), vec![ada, bob]);
    // Part of a name, or a name inside a word, names no one.
    assert!(named("ada lovelace and bobby").is_empty());
}

#[test]
fn a_query_naming_a_speaker_ranks_the_other_speakers_lower() {
    let engine = SearchEngine::new(4, VectorConfig::default()).unwrap();
    let lane = Lane {
        workspace_id: Uuid::nil(),
        scope: "chat".to_string(),
    };
    let (caroline, melanie, nobody) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    let said = |id, text: &str, speaker: &str| IndexDoc {
        speaker: speaker.to_string(),
        ..test_doc(&lane, id, text, "")
    };
    // Caroline's memory is the closest to the query, then the one without a speaker,
    // then Melanie's.
    engine
        .stage_docs([
            (
                said(caroline, "pottery class on saturday", "Caroline"),
                Some(unit_vector(0.1)),
            ),
            (
                said(nobody, "pottery class on sunday", ""),
                Some(unit_vector(0.3)),
            ),
            (
                said(melanie, "pottery class on monday", "Melanie"),
                Some(unit_vector(0.4)),
            ),
        ])
        .unwrap();
    let query_vector = unit_vector(0.0);
    let order = |text: &str| -> Vec<Uuid> {
        engine
            .search(&lane, &hybrid_query(text, &query_vector, 3))
            .unwrap()
            .into_iter()
            .map(|h| h.id)
            .collect()
    };
    assert_eq!(order("pottery class"), vec![caroline, nobody, melanie]);
    assert_eq!(
        order("when is Melanie's pottery class"),
        vec![nobody, melanie, caroline]
    );
    // Naming every speaker favours no one.
    assert_eq!(
        order("pottery class of caroline and melanie"),
        vec![caroline, nobody, melanie]
    );
    // A speaker whose memories are all gone is named by no query.
    engine.remove(&lane, &[melanie]).unwrap();
    assert_eq!(
        order("when is Melanie's pottery class"),
        vec![caroline, nobody]
    );
}

#[test]
fn thread_links_skip_dead_documents_and_survive_edits() {
    let engine = SearchEngine::new(4, VectorConfig::default()).unwrap();
    let lane = Lane {
        workspace_id: Uuid::nil(),
        scope: String::new(),
    };
    let ids: Vec<Uuid> = (0..4).map(|_| Uuid::new_v4()).collect();
    engine
        .stage_docs(ids.iter().enumerate().map(|(i, id)| {
            let thread = if i == 3 { "other" } else { "chat" };
            (test_doc(&lane, *id, "turn", thread), None)
        }))
        .unwrap();
    let index = engine.lane(&lane).unwrap();
    let slot = |id: &Uuid| index.docs().by_id[id];
    let neighbours = |id: &Uuid| index.docs().neighbours(slot(id));
    assert_eq!(neighbours(&ids[0]), (None, Some(slot(&ids[1]))));
    assert_eq!(
        neighbours(&ids[1]),
        (Some(slot(&ids[0])), Some(slot(&ids[2])))
    );
    assert_eq!(neighbours(&ids[3]), (None, None));
    // An edit in place keeps the links.
    engine.refresh_doc(&IndexDoc {
        helpful: 2,
        ..test_doc(&lane, ids[1], "turn", "chat")
    });
    assert_eq!(
        neighbours(&ids[1]),
        (Some(slot(&ids[0])), Some(slot(&ids[2])))
    );
    // A removed turn is stepped over.
    let (first, last) = (slot(&ids[0]), slot(&ids[2]));
    engine.remove(&lane, &[ids[1]]).unwrap();
    assert_eq!(index.docs().neighbours(first), (None, Some(last)));
    assert_eq!(index.docs().neighbours(last), (Some(first), None));
}

/// Nearest memories searched ahead for a batch and brought up to date per line are the ones a
/// search at that time finds: with documents added since (in another project too), with one
/// outside every answer removed; an answer that lost a member while full is searched again.
#[test]
fn nearest_found_ahead_and_brought_up_to_date_match_a_search_now() {
    let engine = SearchEngine::new(4, VectorConfig::default()).unwrap();
    let lane = Lane {
        workspace_id: Uuid::nil(),
        scope: String::new(),
    };
    let stage = |angles: &[f32], project: &str| -> Vec<Uuid> {
        let ids: Vec<Uuid> = angles.iter().map(|_| Uuid::new_v4()).collect();
        engine
            .stage_docs(ids.iter().zip(angles).map(|(id, &angle)| {
                let mut doc = test_doc(&lane, *id, "text", "");
                doc.project = project.to_string();
                (doc, Some(unit_vector(angle)))
            }))
            .unwrap();
        ids
    };
    let first = stage(&[0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 2.0, 2.4], "");
    let filter = Filter {
        projects: vec![String::new()],
        categories: Vec::new(),
        now_micros: 0,
    };
    let vectors = [0.05_f32, 0.65, 1.35].map(unit_vector);
    let queries: Vec<_> = vectors
        .iter()
        .map(|v| (lane.clone(), v.clone(), filter.clone()))
        .collect();
    let k = 3;
    let ahead = engine.nearest_ahead(&queries, k);
    let matches_now = |which: usize| {
        let ahead = ahead[which].as_ref().expect("the lane has an index");
        let now = engine.nearest_now(&lane, &vectors[which], &filter, ahead);
        let now = now.expect("brought up to date");
        let searched = engine.nearest(&lane, &vectors[which], k, &filter);
        assert_eq!(now.neighbours, searched, "query {which}");
        now.unedited
    };
    assert!((0..3).all(matches_now), "nothing was edited");
    // Newer documents, one nearer the first query than all before, one in another project.
    let newer = stage(&[0.04], "");
    stage(&[0.05], "elsewhere");
    assert!((0..3).all(matches_now), "new documents are no edit");
    let now = engine.nearest_now(&lane, &vectors[0], &filter, ahead[0].as_ref().unwrap());
    assert_eq!(now.unwrap().neighbours[0].id, newer[0]);
    // A removed document that no answer holds changes no answer, but it is an edit.
    engine.remove(&lane, &[first[9]]).unwrap();
    assert!(!(0..3).any(matches_now), "a removal is an edit");
    // The third query's full answer loses its nearest: its replacement may be any older
    // document, so the answer is not brought up to date.
    engine.remove(&lane, &[first[7]]).unwrap();
    let last = ahead[2].as_ref().unwrap();
    assert_eq!(engine.nearest_now(&lane, &vectors[2], &filter, last), None);
    // A lane without an index has no answer ahead.
    let other = Lane {
        workspace_id: Uuid::nil(),
        scope: "other".to_string(),
    };
    let none = engine.nearest_ahead(&[(other, vectors[0].clone(), filter.clone())], k);
    assert!(none[0].is_none());
    // A document refreshed in place (its fields edited) is an edit too.
    let again = engine.nearest_ahead(&queries[..1], k);
    let now = |ahead: &NearestAhead| {
        engine
            .nearest_now(&lane, &vectors[0], &filter, ahead)
            .unwrap()
    };
    assert!(now(again[0].as_ref().unwrap()).unedited);
    let mut edited = test_doc(&lane, first[5], "text", "");
    edited.helpful = 3;
    engine.refresh_doc(&edited);
    assert!(!now(again[0].as_ref().unwrap()).unedited);
}

#[test]
fn the_memories_engine_keeps_live_texts_and_dedup_keys() {
    let lane = Lane {
        workspace_id: Uuid::nil(),
        scope: String::new(),
    };
    let other = Lane {
        workspace_id: Uuid::nil(),
        scope: "other".to_string(),
    };
    let hash = |text: &str| content_hash(&normalize(text));
    let plain = SearchEngine::new(4, VectorConfig::default()).unwrap();
    let engine = SearchEngine::new(4, VectorConfig::default())
        .unwrap()
        .keeping_texts();
    let id = Uuid::new_v4();
    let doc = IndexDoc {
        speaker: "Dr. Ada".to_string(),
        ..test_doc(&lane, id, "I live in  Paris.", "")
    };
    for e in [&plain, &engine] {
        e.stage_docs([(doc.clone(), Some(vec![1.0, 0.0, 0.0, 0.0]))])
            .unwrap();
    }
    // An engine that keeps no texts rules nothing out.
    assert_eq!(plain.kept(&lane, id), None);
    assert!(plain.may_hold(&lane, "", &hash("anything")));

    let kept = engine.kept(&lane, id).unwrap();
    assert_eq!(&*kept.text, "I live in  Paris.");
    assert_eq!(kept.speaker_key, "dr ada");
    // The dedup key is the database's: normalised text, trailing punctuation aside.
    assert!(engine.may_hold(&lane, "", &hash("i live in paris")));
    assert!(!engine.may_hold(&lane, "", &hash("I live in Rome")));
    assert!(!engine.may_hold(&lane, "work", &hash("I live in Paris")));
    // A lane not loaded may hold anything.
    assert!(engine.may_hold(&other, "", &hash("I live in Rome")));

    // A project edited in place moves the key.
    engine.refresh_doc(&IndexDoc {
        project: "work".to_string(),
        ..doc.clone()
    });
    assert!(engine.may_hold(&lane, "work", &hash("I live in Paris")));
    assert!(!engine.may_hold(&lane, "", &hash("I live in Paris")));
    assert_eq!(engine.kept(&lane, id).unwrap().text, kept.text);

    // Two live memories with one key (a new version indexed before the old one leaves): the
    // key stays until both are gone, and nothing of either is kept after.
    let next = Uuid::new_v4();
    engine
        .stage_docs([(
            IndexDoc {
                project: "work".to_string(),
                ..test_doc(&lane, next, "i live in paris", "")
            },
            Some(vec![0.0, 1.0, 0.0, 0.0]),
        )])
        .unwrap();
    engine.remove(&lane, &[id]).unwrap();
    assert_eq!(engine.kept(&lane, id), None);
    assert!(engine.may_hold(&lane, "work", &hash("I live in Paris")));
    engine.remove(&lane, &[next]).unwrap();
    assert!(!engine.may_hold(&lane, "work", &hash("I live in Paris")));
    assert_eq!(engine.kept(&lane, next), None);
}
