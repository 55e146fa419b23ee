use super::options::{batch_len, split_target, SPLIT_MIN_BYTES};
use super::scan::FlowIds;
use super::*;
use pcapsleuth_flow::{Endpoint, FlowKey, TcpFlags, TcpSegment};
use proptest::prelude::*;
use std::net::IpAddr;

fn endpoint() -> impl Strategy<Value = Endpoint> {
    let ip = prop_oneof![
        // Few distinct values, so that flows repeat and addresses tie.
        (0u8..3).prop_map(|b| IpAddr::from([10, 0, 0, b])),
        any::<[u8; 4]>().prop_map(IpAddr::from),
        (0u8..2).prop_map(|b| IpAddr::from([0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, b])),
    ];
    (ip, prop_oneof![3305u16..3308, any::<u16>()]).prop_map(|(ip, port)| Endpoint { ip, port })
}

/// Whatever the thread count (up to `-j`'s most on a 256-core machine), a batch of a large file reads
/// at most BATCH_TARGET_BYTES: memory holds one batch, so it does not grow with the cores.
#[test]
fn a_batch_reads_a_bounded_number_of_bytes_whatever_the_threads() {
    for threads in 1..=1024 {
        let n = batch_len(threads);
        assert!(n >= 1 && n <= threads * 2, "{threads} threads: {n} splits");
        let split = split_target(n);
        assert!((SPLIT_MIN_BYTES..=SPLIT_TARGET_BYTES).contains(&split));
        assert!(
            n as u64 * split <= BATCH_TARGET_BYTES,
            "{threads} threads: {n} splits of {split} bytes"
        );
    }
    // Few threads keep the large splits (and the batches) they had.
    assert_eq!((batch_len(2), split_target(batch_len(2))), (4, 4 << 20));
}

proptest! {
    /// The packed IPv4 lookup numbers flows, and names sides and buckets, exactly as the flow keys do.
    #[test]
    fn flow_ids_agree_with_flow_keys(packets in proptest::collection::vec((endpoint(), endpoint()), 1..40)) {
        let mut ids = FlowIds::default();
        let mut keys = Vec::new();
        let mut first_id: Vec<FlowKey> = Vec::new();
        for (src, dst) in packets {
            let seg = TcpSegment {
                src: src.ip,
                src_port: src.port,
                dst: dst.ip,
                dst_port: dst.port,
                seq: 0,
                ack: 0,
                window: 0,
                flags: TcpFlags(0),
                options: &[],
                payload: &[],
                payload_len: 0,
                ttl: 64,
            };
            let (id, side, bucket) = ids.of(&seg, &mut keys, 16);
            let (key, want_side) = FlowKey::of(src, dst);
            if !first_id.contains(&key) {
                first_id.push(key);
            }
            prop_assert_eq!(side, want_side);
            prop_assert_eq!(keys[id as usize], key);
            prop_assert_eq!(first_id.iter().position(|k| *k == key), Some(id as usize));
            prop_assert_eq!(bucket as usize, key.bucket(16));
        }
    }
}
