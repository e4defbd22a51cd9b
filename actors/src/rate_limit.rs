//! Fixed one-minute windows: pure functions of the current time, unit-tested here.

/// Window length in seconds.
pub const WINDOW_SECS: i64 = 60;

/// What a limited response reports in its `X-RateLimit-*` headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateStatus {
    /// Maximum requests in the window.
    pub limit: u32,
    /// Requests left in the window after this one.
    pub remaining: u32,
    /// Unix timestamp (seconds) at which the window resets.
    pub reset_at: i64,
}

impl RateStatus {
    /// Seconds until the window resets, at least 1 (for `Retry-After`).
    pub fn retry_after(&self, now_secs: i64) -> u64 {
        (self.reset_at - now_secs).max(1) as u64
    }
}

/// Outcome of asking for one request in a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allowed(RateStatus),
    Limited(RateStatus),
}

/// Start of the fixed window that contains `now_secs`.
pub fn window_start(now_secs: i64) -> i64 {
    now_secs.div_euclid(WINDOW_SECS) * WINDOW_SECS
}

/// One fixed window's counter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Window {
    start: i64,
    used: u32,
}

impl Window {
    fn roll(&mut self, now_secs: i64) {
        let start = window_start(now_secs);
        if start != self.start {
            self.start = start;
            self.used = 0;
        }
    }

    /// Whether one more request fits under `limit`, without taking it.
    pub fn has_room(&mut self, now_secs: i64, limit: u32) -> bool {
        self.roll(now_secs);
        self.used < limit
    }

    /// The status this window reports under `limit` at `now_secs`.
    pub fn status(&mut self, now_secs: i64, limit: u32) -> RateStatus {
        self.roll(now_secs);
        RateStatus {
            limit,
            remaining: limit.saturating_sub(self.used),
            reset_at: self.start + WINDOW_SECS,
        }
    }

    /// Takes one request from the window (call only after [`Window::has_room`]).
    pub fn take(&mut self, now_secs: i64) {
        self.roll(now_secs);
        self.used = self.used.saturating_add(1);
    }
}

/// Admits one request of a class that counts against both its own window and the backstop.
/// The class status is reported unless the backstop is the limit that refused.
pub fn admit(
    class: &mut Window,
    class_limit: u32,
    backstop: &mut Window,
    backstop_limit: u32,
    now_secs: i64,
) -> Verdict {
    if !backstop.has_room(now_secs, backstop_limit) {
        return Verdict::Limited(backstop.status(now_secs, backstop_limit));
    }
    if !class.has_room(now_secs, class_limit) {
        return Verdict::Limited(class.status(now_secs, class_limit));
    }
    class.take(now_secs);
    backstop.take(now_secs);
    Verdict::Allowed(class.status(now_secs, class_limit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_start_is_the_minute_boundary() {
        assert_eq!(window_start(0), 0);
        assert_eq!(window_start(59), 0);
        assert_eq!(window_start(60), 60);
        assert_eq!(window_start(1_700_000_123), 1_700_000_100);
        assert_eq!(window_start(-1), -60);
    }

    #[test]
    fn admits_exactly_the_limit_then_refuses_until_the_reset() {
        let (mut class, mut backstop) = (Window::default(), Window::default());
        let now = 1_000_030; // window [1_000_020, 1_000_080)
        for i in 0..3 {
            match admit(&mut class, 3, &mut backstop, 100, now) {
                Verdict::Allowed(status) => {
                    assert_eq!(status.remaining, 2 - i);
                    assert_eq!(status.limit, 3);
                    assert_eq!(status.reset_at, 1_000_080);
                }
                Verdict::Limited(_) => panic!("request {i} should pass"),
            }
        }
        let refused = admit(&mut class, 3, &mut backstop, 100, now + 5);
        assert!(matches!(refused, Verdict::Limited(s) if s.remaining == 0 && s.limit == 3));
        // The refused request did not count against the backstop.
        assert_eq!(backstop.status(now, 100).remaining, 97);
        // The next window starts fresh.
        assert!(matches!(
            admit(&mut class, 3, &mut backstop, 100, now + 50),
            Verdict::Allowed(s) if s.remaining == 2
        ));
    }

    #[test]
    fn the_backstop_refuses_across_classes() {
        let (mut a, mut b, mut backstop) =
            (Window::default(), Window::default(), Window::default());
        assert!(matches!(
            admit(&mut a, 10, &mut backstop, 2, 0),
            Verdict::Allowed(_)
        ));
        assert!(matches!(
            admit(&mut b, 10, &mut backstop, 2, 1),
            Verdict::Allowed(_)
        ));
        match admit(&mut a, 10, &mut backstop, 2, 2) {
            Verdict::Limited(status) => assert_eq!(status.limit, 2),
            Verdict::Allowed(_) => panic!("the backstop should refuse"),
        }
    }

    #[test]
    fn retry_after_is_at_least_one_second() {
        let status = RateStatus {
            limit: 1,
            remaining: 0,
            reset_at: 120,
        };
        assert_eq!(status.retry_after(100), 20);
        assert_eq!(status.retry_after(120), 1);
        assert_eq!(status.retry_after(500), 1);
    }
}
