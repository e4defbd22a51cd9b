//! Limits on the doors open to anyone: how often one client address, account, user or
//! workspace may sign up, sign in, create workspaces, register OAuth clients or invite, and how
//! many password hashes run at once. Each limit is a setting (`[abuse]`), and each refusal
//! names it, with the seconds until it lifts.

use std::hash::Hash;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::config::AbuseLimits;
use crate::error::{Error, Result};

/// Keys tracked per limit (least recently used are forgotten beyond this).
const MAX_TRACKED: u64 = 200_000;

/// How often one key may do one thing: at most `limit` in a window of `window_secs` that
/// starts at the key's first attempt.
pub struct Throttle<K: Hash + Eq + Send + Sync + 'static> {
    /// What is limited, for the message ("sign-ups from this address").
    what: &'static str,
    /// The setting that sets it (`abuse.sign_up_per_address_per_hour`).
    setting: &'static str,
    limit: u32,
    window_secs: i64,
    windows: moka::sync::Cache<K, Arc<Mutex<(i64, u32)>>>,
}

impl<K: Hash + Eq + Send + Sync + Clone + 'static> Throttle<K> {
    pub fn new(what: &'static str, setting: &'static str, limit: u32, window_secs: i64) -> Self {
        Throttle {
            what,
            setting,
            limit,
            window_secs,
            windows: moka::sync::Cache::builder()
                .max_capacity(MAX_TRACKED)
                .time_to_idle(Duration::from_secs(window_secs.max(1) as u64))
                .build(),
        }
    }

    /// Counts one attempt by `key` at `now_secs`, or refuses it (429 naming the setting).
    pub fn check_at(&self, key: K, now_secs: i64) -> Result<()> {
        let window = self
            .windows
            .get_with(key, || Arc::new(Mutex::new((now_secs, 0))));
        let mut window = window
            .lock()
            .map_err(|_| Error::Internal("abuse limiter poisoned".to_string()))?;
        let (start, used) = &mut *window;
        if now_secs >= *start + self.window_secs {
            *start = now_secs;
            *used = 0;
        }
        if *used >= self.limit {
            let retry_after = (*start + self.window_secs - now_secs).max(1) as u64;
            return Err(Error::Throttled {
                message: format!(
                    "too many {}: at most {} per {} (setting {}); retry after {retry_after} s",
                    self.what,
                    self.limit,
                    describe_window(self.window_secs),
                    self.setting
                ),
                retry_after,
            });
        }
        *used += 1;
        Ok(())
    }

    pub fn check(&self, key: K) -> Result<()> {
        self.check_at(key, chrono::Utc::now().timestamp())
    }

    /// Gives back an attempt [`Self::check`] counted (a success, for limits that count only
    /// failures: counted first, so that concurrent attempts cannot all slip in).
    pub fn refund(&self, key: &K) {
        if let Some(window) = self.windows.get(key) {
            if let Ok(mut window) = window.lock() {
                window.1 = window.1.saturating_sub(1);
            }
        }
    }
}

/// The key a client address is counted under: IPv4 as it is (IPv4-mapped IPv6 too), IPv6 by
/// its /64, which one host or one customer holds whole (counting each address alone would give
/// them 2^64 windows).
pub fn address_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let mut s = v6.segments();
                s[4..].fill(0);
                IpAddr::V6(std::net::Ipv6Addr::from(s))
            }
        },
    }
}

fn describe_window(secs: i64) -> String {
    match secs {
        60 => "minute".to_string(),
        3_600 => "hour".to_string(),
        86_400 => "day".to_string(),
        other => format!("{other} s"),
    }
}

/// Every limit of the open doors, and the password-hashing slots.
pub struct Doors {
    pub sign_up_by_address: Throttle<IpAddr>,
    pub sign_up_by_email: Throttle<String>,
    pub sign_in_by_address: Throttle<IpAddr>,
    pub sign_in_by_email: Throttle<String>,
    pub workspaces_by_user: Throttle<uuid::Uuid>,
    pub registrations_by_address: Throttle<IpAddr>,
    pub invitations_by_workspace: Throttle<uuid::Uuid>,
    hashing: Arc<Semaphore>,
    hash_wait: Duration,
}

impl Doors {
    pub fn new(limits: &AbuseLimits) -> Self {
        Doors {
            sign_up_by_address: Throttle::new(
                "sign-ups from this address",
                "abuse.sign_up_per_address_per_hour",
                limits.sign_up_per_address_per_hour,
                3_600,
            ),
            sign_up_by_email: Throttle::new(
                "sign-ups for this email",
                "abuse.sign_up_per_email_per_hour",
                limits.sign_up_per_email_per_hour,
                3_600,
            ),
            sign_in_by_address: Throttle::new(
                "sign-in attempts from this address",
                "abuse.sign_in_per_address_per_minute",
                limits.sign_in_per_address_per_minute,
                60,
            ),
            sign_in_by_email: Throttle::new(
                "sign-in attempts for this account",
                "abuse.sign_in_per_email_per_hour",
                limits.sign_in_per_email_per_hour,
                3_600,
            ),
            workspaces_by_user: Throttle::new(
                "workspaces created by you",
                "abuse.workspaces_per_user_per_day",
                limits.workspaces_per_user_per_day,
                86_400,
            ),
            registrations_by_address: Throttle::new(
                "client registrations from this address",
                "abuse.oauth_registrations_per_address_per_hour",
                limits.oauth_registrations_per_address_per_hour,
                3_600,
            ),
            invitations_by_workspace: Throttle::new(
                "invitations from this workspace",
                "abuse.invitations_per_workspace_per_day",
                limits.invitations_per_workspace_per_day,
                86_400,
            ),
            hashing: Arc::new(Semaphore::new(limits.password_hashes.max(1))),
            hash_wait: Duration::from_millis(limits.password_hash_wait_ms),
        }
    }

    /// A slot to compute one password hash in: waits up to `password_hash_wait_ms`, then
    /// 503 with `Retry-After` (memory stays bounded however many sign-ins arrive). The permit
    /// must go with the hash onto its thread, so that a request that is dropped (its client
    /// gone) does not free the slot while the hash still runs.
    pub async fn hashing_slot(&self) -> Result<OwnedSemaphorePermit> {
        match tokio::time::timeout(self.hash_wait, self.hashing.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_)) => Err(Error::Internal("password hashing slots closed".to_string())),
            Err(_) => Err(Error::Busy {
                message: "too many sign-ins and sign-ups at once (setting abuse.password_hashes); retry shortly".to_string(),
                retry_after: 1,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_refuses_past_its_limit_then_lifts() {
        let throttle = Throttle::new("tries", "abuse.tries", 2, 60);
        assert!(throttle.check_at(1u8, 1_000).is_ok());
        assert!(throttle.check_at(1u8, 1_010).is_ok());
        let refused = throttle.check_at(1u8, 1_020).unwrap_err();
        assert_eq!(refused.status(), 429);
        assert_eq!(refused.retry_after(1_020), Some(40));
        assert!(refused.to_string().contains("abuse.tries"), "{refused}");
        // Another key has its own window; the first lifts when its window ends.
        assert!(throttle.check_at(2u8, 1_020).is_ok());
        assert!(throttle.check_at(1u8, 1_060).is_ok());
    }

    #[test]
    fn ipv6_clients_are_counted_by_their_64() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(address_key(a), address_key(b));
        assert_ne!(address_key(a), address_key(c));
        let mapped: IpAddr = "::ffff:203.0.113.5".parse().unwrap();
        assert_eq!(
            address_key(mapped),
            "203.0.113.5".parse::<IpAddr>().unwrap()
        );
    }

    #[test]
    fn a_limit_that_counts_failures_only_leaves_room_for_successes() {
        let throttle = Throttle::new("failures", "abuse.failures", 1, 60);
        for _ in 0..3 {
            assert!(throttle.check(7u8).is_ok());
            throttle.refund(&7u8);
        }
        assert!(throttle.check(7u8).is_ok());
        assert_eq!(throttle.check(7u8).unwrap_err().status(), 429);
    }

    #[tokio::test]
    async fn hashing_slots_are_bounded() {
        let doors = Doors::new(&AbuseLimits {
            password_hashes: 1,
            password_hash_wait_ms: 10,
            ..AbuseLimits::default()
        });
        let held = doors.hashing_slot().await.unwrap();
        let busy = doors.hashing_slot().await.unwrap_err();
        assert_eq!(busy.status(), 503);
        drop(held);
        assert!(doors.hashing_slot().await.is_ok());
    }
}
