//! Where a workspace belongs: rendezvous (highest random weight) hashing over the nodes that
//! serve. Every node computes the same answer from the same member list, and when a node joins
//! or leaves only the workspaces it wins or held move (about one in n).

use sha2::{Digest, Sha256};
use uuid::Uuid;

/// The weight of `node` for `workspace`: the first eight bytes of SHA-256 over both ids (stable
/// across builds and platforms, unlike the standard library's hasher).
pub fn weight(workspace: Uuid, node: Uuid) -> u64 {
    let mut hasher = Sha256::new();
    hasher.update(workspace.as_bytes());
    hasher.update(node.as_bytes());
    let digest = hasher.finalize();
    u64::from_be_bytes(digest[..8].try_into().expect("eight bytes"))
}

/// The node `workspace` belongs on, among `nodes` (ties, which do not happen in practice, go to
/// the smaller id).
pub fn owner(workspace: Uuid, nodes: &[Uuid]) -> Option<Uuid> {
    nodes
        .iter()
        .copied()
        .max_by_key(|node| (weight(workspace, *node), std::cmp::Reverse(*node)))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn ids(n: usize) -> Vec<Uuid> {
        (0..n).map(|_| Uuid::new_v4()).collect()
    }

    #[test]
    fn the_same_members_give_the_same_owner_in_any_order() {
        let nodes = ids(5);
        let mut reversed = nodes.clone();
        reversed.reverse();
        for workspace in ids(200) {
            assert_eq!(owner(workspace, &nodes), owner(workspace, &reversed));
        }
        assert_eq!(owner(Uuid::new_v4(), &[]), None);
    }

    #[test]
    fn workspaces_spread_and_a_join_moves_only_the_newcomers_share() {
        let nodes = ids(3);
        let workspaces = ids(3_000);
        let mut counts: HashMap<Uuid, usize> = HashMap::new();
        for w in &workspaces {
            *counts.entry(owner(*w, &nodes).unwrap()).or_default() += 1;
        }
        for node in &nodes {
            let share = counts[node];
            assert!(
                (800..1_200).contains(&share),
                "{share} of 3000 on one of 3 nodes"
            );
        }
        let mut four = nodes.clone();
        let newcomer = Uuid::new_v4();
        four.push(newcomer);
        let mut moved = 0;
        for w in &workspaces {
            let before = owner(*w, &nodes).unwrap();
            let after = owner(*w, &four).unwrap();
            if before != after {
                assert_eq!(after, newcomer, "a workspace moved between old nodes");
                moved += 1;
            }
        }
        assert!(
            (600..900).contains(&moved),
            "{moved} of 3000 moved to the fourth node"
        );
        // A node leaving moves only its own workspaces.
        let gone = nodes[0];
        let left: Vec<_> = nodes[1..].to_vec();
        for w in &workspaces {
            let before = owner(*w, &nodes).unwrap();
            if before != gone {
                assert_eq!(owner(*w, &left), Some(before));
            }
        }
    }
}
