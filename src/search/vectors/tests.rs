//! Unit tests of the vector segments: HNSW plus exact tail, folds, rebuilds and
//! half-precision storage.

use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashSet;

/// A random unit vector, already rounded to half precision (so that it reads back equal).
fn unit(rng: &mut StdRng, dims: usize) -> Vec<f32> {
    loop {
        let v: Vec<f32> = (0..dims).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 1e-3 {
            let v: Vec<f32> = v.into_iter().map(|x| x / norm).collect();
            return encode(&v).to_f32_vec();
        }
    }
}

fn small_config() -> VectorConfig {
    VectorConfig {
        tail_max: 64,
        segment_max: 256,
        ef_construction: 16,
        ef_search: 64,
        ef_nearest: 16,
    }
}

fn all(_: Slot) -> bool {
    true
}

/// A lane with slots `0..n` in its tail.
fn filled(n: u32, dims: usize, seed: u64) -> (LaneVectors, StdRng) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut lane = LaneVectors::new(dims, small_config());
    add(&mut lane, &mut rng, 0..n);
    (lane, rng)
}

fn add(lane: &mut LaneVectors, rng: &mut StdRng, slots: std::ops::Range<u32>) {
    let dims = lane.dims();
    for slot in slots {
        lane.insert(slot, unit(rng, dims)).expect("insert");
    }
}

/// A lane grown like a live one: slots `0..n` inserted in batches of `batch`, with
/// maintenance run to completion after each batch.
fn grown(n: u32, batch: u32, dims: usize, seed: u64) -> (LaneVectors, StdRng) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut lane = LaneVectors::new(dims, small_config());
    let mut start = 0;
    while start < n {
        let end = (start + batch).min(n);
        add(&mut lane, &mut rng, start..end);
        while lane.needs_maintenance() {
            assert!(step(&mut lane));
        }
        start = end;
    }
    (lane, rng)
}

/// Runs one plan/build/install round.
fn step(lane: &mut LaneVectors) -> bool {
    match lane.plan() {
        Some(job) => lane.install(LaneVectors::build(job)),
        None => false,
    }
}

#[test]
fn half_precision_moves_a_cosine_by_little() {
    let mut rng = StdRng::seed_from_u64(11);
    let mut worst = 0.0f32;
    for _ in 0..200 {
        let a: Vec<f32> = (0..384).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        let b: Vec<f32> = (0..384).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        let (na, nb) = (
            a.iter().map(|x| x * x).sum::<f32>().sqrt(),
            b.iter().map(|x| x * x).sum::<f32>().sqrt(),
        );
        let a: Vec<f32> = a.iter().map(|x| x / na).collect();
        let b: Vec<f32> = b.iter().map(|x| x / nb).collect();
        let exact: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        worst = worst.max((dot(&encode(&a), &encode(&b)) - exact).abs());
        let own = dot(&encode(&a), &encode(&a));
        assert!((own - 1.0).abs() < 1e-3, "own {own}");
    }
    assert!(worst < 1e-3, "worst {worst}");
}

#[test]
fn insert_get_remove() {
    let mut rng = StdRng::seed_from_u64(2);
    let mut lane = LaneVectors::new(16, VectorConfig::default());
    assert_eq!(lane.dims(), 16);
    let a = unit(&mut rng, 16);
    let b = unit(&mut rng, 16);
    lane.insert(7, a.clone()).expect("insert");
    assert_eq!(lane.get(7), Some(a.clone()));
    assert_eq!(lane.live(), 1);
    lane.insert(7, b.clone()).expect("replace");
    assert_eq!(lane.get(7), Some(b.clone()));
    assert_eq!(lane.live(), 1);
    assert_eq!(lane.shape(), (0, 2, 1));
    assert!(lane.remove(7));
    assert!(!lane.remove(7));
    assert!(!lane.remove(99));
    assert_eq!(lane.get(7), None);
    assert_eq!(lane.live(), 0);
    assert!(lane.search(&b, 5, &all).is_empty());

    // Vectors stored in segments are read back from the HNSW.
    let (lane, _) = grown(300, 100, 8, 2);
    assert!(lane.shape().0 >= 1);
    let (mut again, _) = filled(300, 8, 2);
    for slot in 0..300 {
        assert_eq!(lane.get(slot), again.get(slot), "slot {slot}");
    }
    assert!(again.remove(299));
    assert_eq!(again.get(299), None);
}

#[test]
fn wrong_dimensions_is_an_error() {
    let mut lane = LaneVectors::new(4, VectorConfig::default());
    let err = lane.insert(1, vec![1.0; 3]).unwrap_err();
    assert_eq!(
        err,
        VectorError::Dimensions {
            expected: 4,
            got: 3
        }
    );
    assert_eq!(err.to_string(), "vector has 3 dimensions, expected 4");
    assert_eq!(lane.live(), 0);
    // A query of the wrong length finds nothing rather than panicking.
    lane.insert(1, vec![1.0, 0.0, 0.0, 0.0]).expect("insert");
    assert!(lane.search(&[1.0, 0.0], 3, &all).is_empty());
    assert!(lane.search_exact(&[1.0, 0.0], 3, &all).is_empty());
    assert_eq!(lane.search(&[1.0, 0.0, 0.0, 0.0], 0, &all), vec![]);
}

#[test]
fn zero_dimensions_do_not_panic() {
    let mut lane = LaneVectors::new(0, small_config());
    for slot in 0..100 {
        lane.insert(slot, Vec::new()).expect("insert");
    }
    let lane = RwLock::new(lane);
    assert_eq!(maintain(&lane), 1);
    let lane = lane.into_inner().unwrap_or_else(|e| e.into_inner());
    assert_eq!(lane.live(), 100);
    assert_eq!(lane.search(&[], 3, &all).len(), 3);
    assert_eq!(lane.get(5), Some(Vec::new()));
}

#[test]
fn search_equals_exact_on_small_data() {
    // One folded segment (no larger than ef_search: scanned exactly) plus the tail.
    let (mut lane, mut rng) = filled(64, 16, 3);
    assert!(step(&mut lane));
    add(&mut lane, &mut rng, 64..150);
    assert_eq!(lane.shape(), (1, 86, 0));
    for _ in 0..20 {
        let q = unit(&mut rng, 16);
        assert_eq!(lane.search(&q, 10, &all), lane.search_exact(&q, 10, &all));
    }
    let q = unit(&mut rng, 16);
    let everything = lane.search(&q, 1000, &all);
    assert_eq!(everything.len(), 150);
    assert!(everything.windows(2).all(|w| w[0].1 >= w[1].1));
    assert_eq!(everything, lane.search_exact(&q, 1000, &all));
}

#[test]
fn ties_are_broken_by_slot() {
    let mut lane = LaneVectors::new(2, VectorConfig::default());
    for slot in [5, 3, 9, 1] {
        lane.insert(slot, vec![1.0, 0.0]).expect("insert");
    }
    let found: Vec<Slot> = lane
        .search(&[1.0, 0.0], 3, &all)
        .into_iter()
        .map(|r| r.0)
        .collect();
    assert_eq!(found, vec![1, 3, 5]);
}

#[test]
fn search_never_returns_removed_slots() {
    let (mut lane, mut rng) = grown(600, 200, 16, 4);
    assert!(lane.shape().0 >= 2, "shape {:?}", lane.shape());
    let mut removed = HashSet::new();
    for slot in (0..600).step_by(3) {
        assert!(lane.remove(slot));
        removed.insert(slot);
    }
    assert_eq!(lane.live(), 400);
    for _ in 0..20 {
        let q = unit(&mut rng, 16);
        let found = lane.search(&q, 20, &all);
        assert_eq!(found.len(), 20);
        assert!(found.iter().all(|(s, _)| !removed.contains(s)));
    }
    // Every live slot is findable by its own vector.
    for slot in (0..600).filter(|s| !removed.contains(s)) {
        let v = lane.get(slot).expect("live");
        let found = lane.search(&v, 1, &all);
        assert_eq!(found.first().map(|r| r.0), Some(slot));
    }
    // A third dead is no reason to rebuild; searches keep skipping the dead.
    assert!(!lane.needs_maintenance());
    for _ in 0..5 {
        let q = unit(&mut rng, 16);
        let found = lane.search(&q, 400, &all);
        assert_eq!(found.len(), 400);
        assert!(found.iter().all(|(s, _)| !removed.contains(s)));
    }
}

#[test]
fn recall_after_maintenance() {
    let (lane, mut rng) = grown(1000, 500, 32, 5);
    assert!(!lane.needs_maintenance());
    let (segments, tail, dead) = lane.shape();
    assert!(segments >= 2, "shape {:?}", lane.shape());
    assert!(tail < 64);
    assert_eq!(dead, 0);
    assert_eq!(lane.live(), 1000);
    let mut hits = 0;
    for _ in 0..50 {
        let q = unit(&mut rng, 32);
        let exact: HashSet<Slot> = lane
            .search_exact(&q, 10, &all)
            .into_iter()
            .map(|r| r.0)
            .collect();
        let approx = lane.search(&q, 10, &all);
        assert_eq!(approx.len(), 10);
        hits += approx.iter().filter(|r| exact.contains(&r.0)).count();
    }
    let recall = hits as f64 / 500.0;
    assert!(recall >= 0.95, "recall {recall}");
}

#[test]
fn nearest_finds_near_duplicates() {
    // What a save asks: a slightly different copy of a stored vector finds the original.
    let (lane, mut rng) = grown(2000, 100, 32, 21);
    assert!(lane.shape().0 > 1, "several segments: {:?}", lane.shape());
    for slot in (0..2000).step_by(40) {
        let original = lane.get(slot).expect("stored");
        let noise = unit(&mut rng, 32);
        let copy: Vec<f32> = original
            .iter()
            .zip(&noise)
            .map(|(o, n)| o + 0.05 * n)
            .collect();
        let found = lane.nearest(&copy, 5, &all);
        assert_eq!(found.len(), 5);
        assert_eq!(found[0].0, slot, "the original of slot {slot} first");
        assert!(found[0].1 > 0.95);
    }
}

#[test]
fn replace_and_remove_during_build_keep_newest_state() {
    let (mut lane, mut rng) = filled(64, 8, 6);
    let job = lane.plan().expect("tail is full");
    let built = LaneVectors::build(job);
    // Meanwhile: replace slot 1, remove slot 2, add slot 100.
    let newer = unit(&mut rng, 8);
    lane.insert(1, newer.clone()).expect("replace");
    assert!(lane.remove(2));
    let extra = unit(&mut rng, 8);
    lane.insert(100, extra.clone()).expect("insert");
    assert!(lane.install(built));

    assert_eq!(lane.get(1), Some(newer.clone()));
    assert_eq!(lane.get(2), None);
    assert_eq!(lane.get(100), Some(extra.clone()));
    assert_eq!(lane.live(), 64);
    // The segment holds 64 points, 1 and 2 dead; the tail holds the new 1 and 100.
    assert_eq!(lane.shape(), (1, 2, 2));
    let found = lane.search(&newer, 64, &all);
    assert_eq!(found.len(), 64);
    assert_eq!(found.iter().filter(|r| r.0 == 1).count(), 1);
    assert!(found.iter().all(|r| r.0 != 2));
    assert_eq!(found[0].0, 1);
    // A vector rounded to half precision is unit length within the rounding.
    assert!((found[0].1 - 1.0).abs() < 2e-3, "{}", found[0].1);
    for slot in 0..64u32 {
        if let Some(v) = lane.get(slot) {
            let hit = lane.search(&v, 1, &all);
            assert_eq!(hit[0].0, slot);
        }
    }
    // Folding again moves the newest vector of slot 1 into a segment.
    add(&mut lane, &mut rng, 200..262);
    let lock = RwLock::new(lane);
    maintain(&lock);
    let lane = lock.into_inner().unwrap_or_else(|e| e.into_inner());
    assert_eq!(lane.get(1), Some(newer.clone()));
    assert_eq!(lane.shape().1, 0);
}

#[test]
fn append_during_changes_keeps_newest_state() {
    let (mut lane, mut rng) = filled(64, 8, 7);
    assert!(step(&mut lane));
    add(&mut lane, &mut rng, 64..128);
    assert_eq!(lane.shape(), (1, 64, 0));
    let job = lane.plan().expect("the tail is full");
    assert!(format!("{job:?}").contains("base: Some(64)"), "{job:?}");
    let built = LaneVectors::build(job);
    // Meanwhile: replace slot 10 (in the segment), remove 100 (in the folded tail), add 300.
    let newer = unit(&mut rng, 8);
    lane.insert(10, newer.clone()).expect("replace");
    assert!(lane.remove(100));
    lane.insert(300, unit(&mut rng, 8)).expect("insert");
    assert!(lane.install(built));
    // One segment of 128 points (10 and 100 dead); the tail holds the new 10 and 300.
    assert_eq!(lane.shape(), (1, 2, 2));
    assert_eq!(lane.get(10), Some(newer.clone()));
    assert_eq!(lane.get(100), None);
    assert_eq!(lane.live(), 128);
    let found = lane.search(&newer, 200, &all);
    assert_eq!(found.len(), 128);
    assert_eq!(found[0].0, 10);
    assert_eq!(found, lane.search_exact(&newer, 200, &all));
    for slot in (0..128).chain([300]).filter(|&s| s != 100) {
        let v = lane.get(slot).expect("live");
        assert_eq!(lane.search(&v, 1, &all)[0].0, slot, "slot {slot}");
    }
}

#[test]
fn folds_fill_a_segment_before_starting_another() {
    // segment_max is 256: a tail of 64 at a time fills the first segment in four folds.
    let (lane, _) = grown(640, 64, 8, 17);
    let mut lens: Vec<usize> = lane.segments.iter().map(Segment::len).collect();
    lens.sort_unstable();
    assert_eq!(lens, vec![128, 256, 256]);
    assert_eq!(lane.shape(), (3, 0, 0));
    // A tail longer than a segment's room is folded in parts.
    let (mut lane, _) = filled(600, 8, 18);
    let lock = RwLock::new(lane);
    assert_eq!(maintain(&lock), 3);
    lane = lock.into_inner().unwrap_or_else(|e| e.into_inner());
    let lens: Vec<usize> = lane.segments.iter().map(Segment::len).collect();
    assert_eq!(lens, vec![256, 256, 88]);
    assert_eq!(lane.live(), 600);
    // The next fold goes to the segment with room.
    let mut rng = StdRng::seed_from_u64(19);
    add(&mut lane, &mut rng, 1000..1064);
    assert!(step(&mut lane));
    let mut lens: Vec<usize> = lane.segments.iter().map(Segment::len).collect();
    lens.sort_unstable();
    assert_eq!(lens, vec![152, 256, 256]);
}

#[test]
fn a_segment_more_than_half_dead_is_rebuilt() {
    let (mut lane, mut rng) = grown(256, 64, 8, 20);
    assert_eq!(lane.shape(), (1, 0, 0));
    for slot in 0..128 {
        assert!(lane.remove(slot));
    }
    // Half dead: still appended to.
    assert!(!lane.needs_maintenance());
    assert!(lane.remove(128));
    assert!(lane.needs_maintenance());
    // A full tail is folded first, into a new segment: the only one is more than half dead.
    add(&mut lane, &mut rng, 500..564);
    assert!(step(&mut lane));
    assert_eq!(lane.shape(), (2, 0, 129));
    assert!(step(&mut lane));
    assert_eq!(lane.shape(), (2, 0, 0));
    assert!(!lane.needs_maintenance());
    assert_eq!(lane.live(), 127 + 64);
    for slot in (129..256).chain(500..564) {
        let v = lane.get(slot).expect("live");
        assert_eq!(lane.search(&v, 1, &all)[0].0, slot, "slot {slot}");
    }
}

#[test]
fn stale_job_is_refused() {
    // Two folds planned from the same tail: the second is stale once the first is in.
    let (mut lane, _) = filled(64, 8, 9);
    let first = LaneVectors::build(lane.plan().expect("fold"));
    let second = LaneVectors::build(lane.plan().expect("fold"));
    assert!(lane.install(first));
    assert!(!lane.install(second));
    assert_eq!(lane.shape(), (1, 0, 0));

    // Two appends to the same segment: the second one's base is gone.
    let (mut lane, mut rng) = filled(64, 8, 8);
    assert!(step(&mut lane));
    add(&mut lane, &mut rng, 64..128);
    let first = LaneVectors::build(lane.plan().expect("append"));
    let second = LaneVectors::build(lane.plan().expect("append"));
    assert!(lane.install(first));
    let shape = lane.shape();
    assert_eq!(shape, (1, 0, 0));
    assert!(!lane.install(second));
    assert_eq!(lane.shape(), shape);
    assert_eq!(lane.live(), 128);

    // An append whose segment was emptied by removals is refused.
    let (mut lane, mut rng) = filled(64, 8, 10);
    assert!(step(&mut lane));
    add(&mut lane, &mut rng, 64..128);
    let job = LaneVectors::build(lane.plan().expect("append"));
    for slot in 0..64 {
        lane.remove(slot);
    }
    assert_eq!(lane.shape(), (0, 64, 0));
    assert!(!lane.install(job));
    assert_eq!(lane.live(), 64);

    // A job from another lane is refused.
    let (other, _) = filled(64, 8, 11);
    let foreign = LaneVectors::build(other.plan().expect("fold"));
    let (mut lane, _) = filled(64, 8, 11);
    assert!(!lane.install(foreign));
    assert_eq!(lane.shape(), (0, 64, 0));
    assert!(other.plan().is_some());
}

#[test]
fn restrictive_filter_returns_all_matches() {
    let (lane, mut rng) = grown(600, 200, 16, 12);
    let wanted: HashSet<Slot> = [3, 250, 411, 477, 599].into_iter().collect();
    let filter = |s: Slot| wanted.contains(&s);
    for _ in 0..5 {
        let q = unit(&mut rng, 16);
        let found = lane.search(&q, 10, &filter);
        let slots: HashSet<Slot> = found.iter().map(|r| r.0).collect();
        assert_eq!(slots, wanted);
        assert_eq!(found, lane.search_exact(&q, 10, &filter));
    }
}

#[test]
fn shape_reflects_folding() {
    let (mut lane, _) = filled(100, 8, 13);
    assert_eq!(lane.shape(), (0, 100, 0));
    assert!(lane.needs_maintenance());
    lane.remove(0);
    lane.remove(99);
    assert_eq!(lane.shape(), (0, 100, 2));
    assert!(step(&mut lane));
    // The whole tail was folded; its dead entries were dropped.
    assert_eq!(lane.shape(), (1, 0, 0));
    assert_eq!(lane.live(), 98);
    assert!(!lane.needs_maintenance());
    assert!(lane.plan().is_none());
}

#[test]
fn fully_removed_segment_is_dropped() {
    let (mut lane, _) = filled(64, 8, 14);
    assert!(step(&mut lane));
    assert_eq!(lane.shape(), (1, 0, 0));
    for slot in 0..64 {
        assert!(lane.remove(slot));
    }
    assert_eq!(lane.shape(), (0, 0, 0));
    assert_eq!(lane.live(), 0);
}

#[test]
fn maintain_completes() {
    let (lane, mut rng) = grown(200, 100, 8, 15);
    let lane = RwLock::new(lane);
    {
        let mut guard = lane.write().unwrap_or_else(|e| e.into_inner());
        assert!(!guard.needs_maintenance());
        add(&mut guard, &mut rng, 1000..1100);
        assert!(guard.needs_maintenance());
    }
    // 56 fill the segment of 200; the other 44 stay in the tail (shorter than tail_max).
    assert_eq!(maintain(&lane), 1);
    assert_eq!(maintain(&lane), 0);
    let lane = lane.into_inner().unwrap_or_else(|e| e.into_inner());
    assert!(!lane.needs_maintenance());
    assert_eq!(lane.live(), 300);
    assert_eq!(lane.shape(), (1, 44, 0));
    for slot in [0, 199, 1000, 1099] {
        assert!(lane.get(slot).is_some());
    }
}

#[test]
fn lane_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<LaneVectors>();
    check::<MergeJob>();
    check::<BuiltSegment>();
    let (lane, _) = filled(3, 4, 16);
    assert!(format!("{lane:?}").contains("live: 3"));
    assert!(format!("{:?}", lane.plan()).contains("None"));
}
