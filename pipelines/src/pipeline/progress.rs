//! Recorded progress: the pipeline writes it, the supervisor reads it to decide staleness.
//! Heartbeats come from here, never from a timer: a phase that is stuck records nothing.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::time::{Duration, Instant};

use super::Phase;

/// Shared between one generation and the supervisor.
#[derive(Debug)]
pub struct ProgressCell {
    origin: Instant,
    /// Milliseconds since `origin` of the last recorded progress.
    last_ms: AtomicU64,
    phase: AtomicU8,
    processed: AtomicU32,
    total: AtomicU32,
    /// Waiting for a shared slot (another document's OCR, say): not stuck, so not stale.
    waiting: AtomicBool,
}

impl Default for ProgressCell {
    fn default() -> Self {
        ProgressCell::new()
    }
}

impl ProgressCell {
    pub fn new() -> Self {
        ProgressCell {
            origin: Instant::now(),
            last_ms: AtomicU64::new(0),
            phase: AtomicU8::new(0),
            processed: AtomicU32::new(0),
            total: AtomicU32::new(0),
            waiting: AtomicBool::new(false),
        }
    }

    /// Records progress now.
    pub fn record(&self, phase: Phase, processed: u32, total: u32) {
        self.phase.store(phase as u8, Ordering::Relaxed);
        self.processed.store(processed, Ordering::Relaxed);
        self.total.store(total, Ordering::Relaxed);
        self.beat();
    }

    /// Records that work moved, without new counts.
    pub fn beat(&self) {
        let ms = self.origin.elapsed().as_millis() as u64;
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    /// Marks the start or the end of a wait for a shared slot; both count as progress.
    pub fn set_waiting(&self, waiting: bool) {
        self.waiting.store(waiting, Ordering::Relaxed);
        self.beat();
    }

    pub fn is_waiting(&self) -> bool {
        self.waiting.load(Ordering::Relaxed)
    }

    /// The counts last recorded: (processed, total).
    pub fn counts(&self) -> (u32, u32) {
        (
            self.processed.load(Ordering::Relaxed),
            self.total.load(Ordering::Relaxed),
        )
    }

    /// The phase last recorded.
    pub fn phase(&self) -> Phase {
        Phase::ALL[usize::from(self.phase.load(Ordering::Relaxed)).min(Phase::ALL.len() - 1)]
    }

    /// How long since progress was last recorded.
    pub fn silent_for(&self) -> Duration {
        let now = self.origin.elapsed().as_millis() as u64;
        Duration::from_millis(now.saturating_sub(self.last_ms.load(Ordering::Relaxed)))
    }
}

/// Whether a generation silent for `silent_for` is stale under `stale_after`. A generation
/// waiting for a shared slot is queued, not stuck.
pub fn is_stale(silent_for: Duration, waiting: bool, stale_after: Duration) -> bool {
    !waiting && silent_for >= stale_after
}

/// Whether progress is due to be persisted: always when the phase changed, else when the last
/// write is `persist_every` old.
pub fn persist_due(
    phase_changed: bool,
    since_last_write: Option<Duration>,
    persist_every: Duration,
) -> bool {
    phase_changed || since_last_write.is_none_or(|since| since >= persist_every)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staleness_is_silence_past_the_limit() {
        let limit = Duration::from_secs(10);
        assert!(!is_stale(Duration::from_secs(9), false, limit));
        assert!(is_stale(Duration::from_secs(10), false, limit));
        assert!(is_stale(Duration::from_secs(60), false, limit));
        assert!(!is_stale(Duration::from_secs(60), true, limit));
    }

    #[test]
    fn recording_resets_the_silence_and_keeps_the_phase() {
        let cell = ProgressCell::new();
        std::thread::sleep(Duration::from_millis(20));
        assert!(cell.silent_for() >= Duration::from_millis(20));
        cell.record(Phase::Embed, 3, 10);
        assert!(cell.silent_for() < Duration::from_millis(20));
        assert_eq!(cell.phase(), Phase::Embed);
    }

    #[test]
    fn progress_is_persisted_on_phase_change_or_after_the_interval() {
        let every = Duration::from_secs(1);
        assert!(persist_due(true, Some(Duration::ZERO), every));
        assert!(persist_due(false, None, every));
        assert!(!persist_due(false, Some(Duration::from_millis(300)), every));
        assert!(persist_due(false, Some(Duration::from_secs(2)), every));
    }
}
