//! What in run A is compared with what in run B: servers by endpoint (or the only ones left), statement
//! groups by command and fingerprint, error codes by code.

use std::collections::BTreeMap;

use pcapsleuth_flow::Endpoint;

use super::model::ServerMatch;
use super::side::SideStatement;

/// Server endpoints paired: those with the same `ip:port` in both runs, then, if exactly one is left on
/// each side, those two (a failover to a new primary, the same workload against another host); the
/// rest alone. Indices into each run's servers.
pub(crate) fn pair_servers(
    a: &[Endpoint],
    b: &[Endpoint],
) -> Vec<(Option<usize>, Option<usize>, ServerMatch)> {
    let mut out = Vec::new();
    let mut left_a: Vec<usize> = Vec::new();
    let mut taken_b = vec![false; b.len()];
    for (i, e) in a.iter().enumerate() {
        match b.iter().position(|x| x == e) {
            Some(j) => {
                taken_b[j] = true;
                out.push((
                    Some(i),
                    Some(j),
                    ServerMatch {
                        a: Some(e.to_string()),
                        b: Some(e.to_string()),
                        basis: "same_endpoint",
                    },
                ));
            }
            None => left_a.push(i),
        }
    }
    let left_b: Vec<usize> = (0..b.len()).filter(|&j| !taken_b[j]).collect();
    if let ([i], [j]) = (&left_a[..], &left_b[..]) {
        out.push((
            Some(*i),
            Some(*j),
            ServerMatch {
                a: Some(a[*i].to_string()),
                b: Some(b[*j].to_string()),
                basis: "only_one_left",
            },
        ));
        return out;
    }
    for i in left_a {
        out.push((
            Some(i),
            None,
            ServerMatch {
                a: Some(a[i].to_string()),
                b: None,
                basis: "only_in_a",
            },
        ));
    }
    for j in left_b {
        out.push((
            None,
            Some(j),
            ServerMatch {
                a: None,
                b: Some(b[j].to_string()),
                basis: "only_in_b",
            },
        ));
    }
    out
}

/// Statement groups of both runs by (command byte, fingerprint), in that order: each with its group in
/// A and in B, either missing where the run has none.
pub(crate) fn pair_statements<'a>(
    a: &'a [SideStatement],
    b: &'a [SideStatement],
) -> Vec<(Option<&'a SideStatement>, Option<&'a SideStatement>)> {
    type Key<'k> = (u8, &'k str);
    let mut pairs: BTreeMap<Key<'a>, (Option<&'a SideStatement>, Option<&'a SideStatement>)> =
        BTreeMap::new();
    for s in a {
        pairs
            .entry((s.command.byte(), s.fingerprint.as_str()))
            .or_default()
            .0 = Some(s);
    }
    for s in b {
        pairs
            .entry((s.command.byte(), s.fingerprint.as_str()))
            .or_default()
            .1 = Some(s);
    }
    pairs.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(s: &str) -> Endpoint {
        s.parse().unwrap()
    }

    #[test]
    fn servers_pair_by_endpoint_then_the_only_ones_left() {
        let same = pair_servers(&[e("10.0.0.1:3306")], &[e("10.0.0.1:3306")]);
        assert_eq!(same.len(), 1);
        assert_eq!(same[0].2.basis, "same_endpoint");
        // A failover: the only server of each run, at another address.
        let moved = pair_servers(&[e("10.0.0.1:3306")], &[e("10.0.0.2:3306")]);
        assert_eq!((moved[0].0, moved[0].1), (Some(0), Some(0)));
        assert_eq!(moved[0].2.basis, "only_one_left");
        // Two shards in A, one of them and another in B: the common one paired, the others paired too.
        let shards = pair_servers(
            &[e("10.0.0.1:3306"), e("10.0.0.2:3306")],
            &[e("10.0.0.2:3306"), e("10.0.0.3:3306")],
        );
        assert_eq!(shards.len(), 2);
        // Two left on one side: none guessed.
        let many = pair_servers(
            &[e("10.0.0.1:3306"), e("10.0.0.2:3306")],
            &[e("10.0.0.3:3306")],
        );
        let bases: Vec<&str> = many.iter().map(|m| m.2.basis).collect();
        assert_eq!(bases, ["only_in_a", "only_in_a", "only_in_b"]);
    }
}
