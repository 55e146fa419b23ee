//! Criterion benchmarks of the stages, on a real fixture held in memory (throughput in bytes of capture):
//! reading records, decoding packets, the engine with connections only (`first-reset`), with MySQL
//! statistics (`mysql`) and with every analysis (`report`). Whole-binary runs against tcpdump and tshark are `benches/run.sh`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pcapsleuth::analysis::{analyze, EngineOptions, Everything, MysqlStatistics};
use pcapsleuth::capture::Capture;
use pcapsleuth::flow::decode;

fn fixture() -> Capture {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fixtures/err1146-storm.pcap"
    );
    let bytes = std::fs::read(path).expect("fixture");
    Capture::from_vec(path, bytes).expect("capture")
}

fn stages(c: &mut Criterion) {
    let cap = fixture();
    let mut g = c.benchmark_group("err1146-storm");
    g.throughput(Throughput::Bytes(cap.len()));
    g.bench_function("read records", |b| {
        b.iter(|| {
            let mut r = cap.reader_all();
            let mut n = 0u64;
            while let Some(rec) = r.next_record() {
                n += rec.data.len() as u64;
            }
            n
        })
    });
    g.bench_function("read + decode", |b| {
        b.iter(|| {
            let mut r = cap.reader_all();
            let mut tcp = 0u64;
            while let Some(rec) = r.next_record() {
                tcp += u64::from(matches!(
                    decode(rec.link, rec.data),
                    pcapsleuth::flow::Decoded::Tcp(_)
                ));
            }
            tcp
        })
    });
    let opts = EngineOptions {
        threads: 1,
        ..EngineOptions::default()
    };
    g.bench_function("engine, connections only (first-reset)", |b| {
        b.iter(|| analyze(&cap, &opts, || ()).connections.len())
    });
    g.bench_function("engine, MySQL statistics (mysql)", |b| {
        b.iter(|| {
            analyze(&cap, &opts, MysqlStatistics::default)
                .connections
                .len()
        })
    });
    g.bench_function("engine, everything (report, rt, rate)", |b| {
        b.iter(|| analyze(&cap, &opts, Everything::default).connections.len())
    });
    g.finish();
}

criterion_group!(benches, stages);
criterion_main!(benches);
