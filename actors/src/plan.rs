//! Plans and the limits they set: pure data, no I/O.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A workspace's subscription plan. A workspace without a plan reads as [`Plan::Free`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Plan {
    #[default]
    Free,
    Hobby,
    Pro,
    Ultimate,
}

impl Plan {
    pub const ALL: [Plan; 4] = [Plan::Free, Plan::Hobby, Plan::Pro, Plan::Ultimate];

    pub fn as_str(self) -> &'static str {
        match self {
            Plan::Free => "free",
            Plan::Hobby => "hobby",
            Plan::Pro => "pro",
            Plan::Ultimate => "ultimate",
        }
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, thiserror::Error)]
#[error("unknown plan '{0}': expected free, hobby, pro or ultimate")]
pub struct UnknownPlan(pub String);

impl FromStr for Plan {
    type Err = UnknownPlan;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "free" => Ok(Plan::Free),
            "hobby" => Ok(Plan::Hobby),
            "pro" => Ok(Plan::Pro),
            "ultimate" => Ok(Plan::Ultimate),
            other => Err(UnknownPlan(other.to_string())),
        }
    }
}

/// The rate-limited classes of API traffic. Every authenticated request belongs to one class
/// and also counts against the per-workspace backstop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EndpointClass {
    /// `POST /api/memories`
    Save,
    /// `GET /api/memories/search`
    Search,
    /// memory and vault feedback
    Feedback,
    /// every other read
    Read,
    /// every other write
    Write,
}

impl EndpointClass {
    pub const ALL: [EndpointClass; 5] = [
        EndpointClass::Save,
        EndpointClass::Search,
        EndpointClass::Feedback,
        EndpointClass::Read,
        EndpointClass::Write,
    ];

    /// Its name in metrics.
    pub fn name(self) -> &'static str {
        match self {
            EndpointClass::Save => "save",
            EndpointClass::Search => "search",
            EndpointClass::Feedback => "feedback",
            EndpointClass::Read => "read",
            EndpointClass::Write => "write",
        }
    }

    pub fn index(self) -> usize {
        match self {
            EndpointClass::Save => 0,
            EndpointClass::Search => 1,
            EndpointClass::Feedback => 2,
            EndpointClass::Read => 3,
            EndpointClass::Write => 4,
        }
    }
}

/// Requests per minute and the memory limit of one plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    pub save_per_minute: u32,
    pub search_per_minute: u32,
    pub feedback_per_minute: u32,
    pub read_per_minute: u32,
    pub write_per_minute: u32,
    /// All API traffic of one workspace in one minute (the abuse backstop).
    pub backstop_per_minute: u32,
    /// Current (non-deleted, not superseded) memories a workspace may hold.
    pub memory_limit: u64,
}

impl Limits {
    pub fn per_minute(&self, class: EndpointClass) -> u32 {
        match class {
            EndpointClass::Save => self.save_per_minute,
            EndpointClass::Search => self.search_per_minute,
            EndpointClass::Feedback => self.feedback_per_minute,
            EndpointClass::Read => self.read_per_minute,
            EndpointClass::Write => self.write_per_minute,
        }
    }
}

/// The limits of every plan: the table of part 8 of the contract and decisions.md.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanTable {
    pub free: Limits,
    pub hobby: Limits,
    pub pro: Limits,
    pub ultimate: Limits,
}

impl PlanTable {
    pub fn limits(&self, plan: Plan) -> &Limits {
        match plan {
            Plan::Free => &self.free,
            Plan::Hobby => &self.hobby,
            Plan::Pro => &self.pro,
            Plan::Ultimate => &self.ultimate,
        }
    }

    /// Overrides the memory limit of each plan (configuration).
    pub fn with_memory_limits(mut self, free: u64, hobby: u64, pro: u64, ultimate: u64) -> Self {
        self.free.memory_limit = free;
        self.hobby.memory_limit = hobby;
        self.pro.memory_limit = pro;
        self.ultimate.memory_limit = ultimate;
        self
    }
}

const fn limits(save: u32, search: u32, feedback: u32, memory_limit: u64) -> Limits {
    Limits {
        save_per_minute: save,
        search_per_minute: search,
        feedback_per_minute: feedback,
        read_per_minute: 600,
        write_per_minute: 120,
        backstop_per_minute: 3_000,
        memory_limit,
    }
}

impl Default for PlanTable {
    fn default() -> Self {
        PlanTable {
            free: limits(30, 60, 30, 1_000),
            hobby: limits(100, 200, 60, 10_000),
            pro: limits(300, 600, 120, 100_000),
            ultimate: limits(1_000, 2_000, 300, 1_000_000),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_round_trips_through_its_name() {
        for plan in Plan::ALL {
            assert_eq!(plan.as_str().parse::<Plan>().unwrap(), plan);
        }
        assert!("gold".parse::<Plan>().is_err());
    }

    #[test]
    fn default_table_matches_the_contract() {
        let table = PlanTable::default();
        assert_eq!(table.limits(Plan::Free).per_minute(EndpointClass::Save), 30);
        assert_eq!(
            table.limits(Plan::Hobby).per_minute(EndpointClass::Search),
            200
        );
        assert_eq!(
            table.limits(Plan::Pro).per_minute(EndpointClass::Feedback),
            120
        );
        assert_eq!(
            table.limits(Plan::Ultimate).per_minute(EndpointClass::Save),
            1_000
        );
        assert_eq!(
            table.limits(Plan::Ultimate).per_minute(EndpointClass::Read),
            600
        );
        assert_eq!(
            table.limits(Plan::Free).per_minute(EndpointClass::Write),
            120
        );
        assert_eq!(table.limits(Plan::Free).memory_limit, 1_000);
        assert_eq!(table.limits(Plan::Ultimate).memory_limit, 1_000_000);
    }

    #[test]
    fn class_indexes_are_distinct() {
        let mut seen = [false; 5];
        for class in EndpointClass::ALL {
            assert!(!seen[class.index()]);
            seen[class.index()] = true;
        }
    }
}
