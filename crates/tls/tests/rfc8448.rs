//! The simple 1-RTT handshake of RFC 8448 3 (TLS 1.3, TLS_AES_128_GCM_SHA256), record by record, with
//! its four traffic secrets as a key log would give them: every protected record opens, the application
//! data is the trace's, and bytes that do not authenticate are never handed on.

use pcapsleuth_ssl::{
    At, CipherSuite, ExchangeEnd, KeyLog, KeyStatus, Plaintext, ProtocolVersion, Sender,
    TlsConnection,
};

fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(u8::is_ascii_hexdigit).collect();
    digits
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
        .collect()
}

const CLIENT_RANDOM: &str = "cb34ecb1e78163ba1c38c6dacb196a6dffa21a8d9912ec18a2ef6283024dece7";

/// The trace's secrets, as `SSLKEYLOGFILE` lines.
pub(crate) fn key_log() -> KeyLog {
    KeyLog::parse(
        format!(
            "CLIENT_HANDSHAKE_TRAFFIC_SECRET {CLIENT_RANDOM} b3eddb126e067f35a780b3abf45e2d8f3b1a950738f52e9600746a0e27a55a21\n\
             SERVER_HANDSHAKE_TRAFFIC_SECRET {CLIENT_RANDOM} b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38\n\
             CLIENT_TRAFFIC_SECRET_0 {CLIENT_RANDOM} 9e40646ce79a7f9dc05af8889bce6552875afa0b06df0087f792ebb7c17504a5\n\
             SERVER_TRAFFIC_SECRET_0 {CLIENT_RANDOM} a11af9f05531f856ad47116b45a950328204b4f44bfb6b3a4b4f1f3fcb631643\n"
        )
        .as_bytes(),
    )
}

const CLIENT_HELLO: &str = "16 03 01 00 c4
    01 00 00 c0 03 03 cb 34 ec b1 e7 81 63
    ba 1c 38 c6 da cb 19 6a 6d ff a2 1a 8d 99 12 ec 18 a2 ef 62 83
    02 4d ec e7 00 00 06 13 01 13 03 13 02 01 00 00 91 00 00 00 0b
    00 09 00 00 06 73 65 72 76 65 72 ff 01 00 01 00 00 0a 00 14 00
    12 00 1d 00 17 00 18 00 19 01 00 01 01 01 02 01 03 01 04 00 23
    00 00 00 33 00 26 00 24 00 1d 00 20 99 38 1d e5 60 e4 bd 43 d2
    3d 8e 43 5a 7d ba fe b3 c0 6e 51 c1 3c ae 4d 54 13 69 1e 52 9a
    af 2c 00 2b 00 03 02 03 04 00 0d 00 20 00 1e 04 03 05 03 06 03
    02 03 08 04 08 05 08 06 04 01 05 01 06 01 02 01 04 02 05 02 06
    02 02 02 00 2d 00 02 01 01 00 1c 00 02 40 01";

const SERVER_HELLO: &str = "16 03 03 00 5a
    02 00 00 56 03 03 a6 af 06 a4 12 18 60
    dc 5e 6e 60 24 9c d3 4c 95 93 0c 8a c5 cb 14 34 da c1 55 77 2e
    d3 e2 69 28 00 13 01 00 00 2e 00 33 00 24 00 1d 00 20 c9 82 88
    76 11 20 95 fe 66 76 2b db f7 c6 72 e1 56 d6 cc 25 3b 83 3d f1
    dd 69 b1 b0 4e 75 1f 0f 00 2b 00 02 03 04";

/// EncryptedExtensions, Certificate, CertificateVerify and Finished, under the server's handshake keys.
const SERVER_FLIGHT: &str = "17 03 03 02 a2 d1 ff 33 4a 56 f5 bf f6 59 4a 07
    cc 87 b5 80 23 3f 50 0f 45 e4 89 e7 f3 3a f3 5e df 78 69 fc f4 0a a4 0a a2 b8 ea 73 f8 48 a7 ca
    07 61 2e f9 f9 45 cb 96 0b 40 68 90 51 23 ea 78 b1 11 b4 29 ba 91 91 cd 05 d2 a3 89 28 0f 52 61
    34 aa dc 7f c7 8c 4b 72 9d f8 28 b5 ec f7 b1 3b d9 ae fb 0e 57 f2 71 58 5b 8e a9 bb 35 5c 7c 79
    02 07 16 cf b9 b1 18 3e f3 ab 20 e3 7d 57 a6 b9 d7 47 76 09 ae e6 e1 22 a4 cf 51 42 73 25 25 0c
    7d 0e 50 92 89 44 4c 9b 3a 64 8f 1d 71 03 5d 2e d6 5b 0e 3c dd 0c ba e8 bf 2d 0b 22 78 12 cb b3
    60 98 72 55 cc 74 41 10 c4 53 ba a4 fc d6 10 92 8d 80 98 10 e4 b7 ed 1a 8f d9 91 f0 6a a6 24 82
    04 79 7e 36 a6 a7 3b 70 a2 55 9c 09 ea d6 86 94 5b a2 46 ab 66 e5 ed d8 04 4b 4c 6d e3 fc f2 a8
    94 41 ac 66 27 2f d8 fb 33 0e f8 19 05 79 b3 68 45 96 c9 60 bd 59 6e ea 52 0a 56 a8 d6 50 f5 63
    aa d2 74 09 96 0d ca 63 d3 e6 88 61 1e a5 e2 2f 44 15 cf 95 38 d5 1a 20 0c 27 03 42 72 96 8a 26
    4e d6 54 0c 84 83 8d 89 f7 2c 24 46 1a ad 6d 26 f5 9e ca ba 9a cb bb 31 7b 66 d9 02 f4 f2 92 a3
    6a c1 b6 39 c6 37 ce 34 31 17 b6 59 62 22 45 31 7b 49 ee da 0c 62 58 f1 00 d7 d9 61 ff b1 38 64
    7e 92 ea 33 0f ae ea 6d fa 31 c7 a8 4d c3 bd 7e 1b 7a 6c 71 78 af 36 87 90 18 e3 f2 52 10 7f 24
    3d 24 3d c7 33 9d 56 84 c8 b0 37 8b f3 02 44 da 8c 87 c8 43 f5 e5 6e b4 c5 e8 28 0a 2b 48 05 2c
    f9 3b 16 49 9a 66 db 7c ca 71 e4 59 94 26 f7 d4 61 e6 6f 99 88 2b d8 9f c5 08 00 be cc a6 2d 6c
    74 11 6d bd 29 72 fd a1 fa 80 f8 5d f8 81 ed be 5a 37 66 89 36 b3 35 58 3b 59 91 86 dc 5c 69 18
    a3 96 fa 48 a1 81 d6 b6 fa 4f 9d 62 d5 13 af bb 99 2f 2b 99 2f 67 f8 af e6 7f 76 91 3f a3 88 cb
    56 30 c8 ca 01 e0 c6 5d 11 c6 6a 1e 2a c4 c8 59 77 b7 c7 a6 99 9b bf 10 dc 35 ae 69 f5 51 56 14
    63 6c 0b 9b 68 c1 9e d2 e3 1c 0b 3b 66 76 30 38 eb ba 42 f3 b3 8e dc 03 99 f3 a9 f2 3f aa 63 97
    8c 31 7f c9 fa 66 a7 3f 60 f0 50 4d e9 3b 5b 84 5e 27 55 92 c1 23 35 ee 34 0b bc 4f dd d5 02 78
    40 16 e4 b3 be 7e f0 4d da 49 f4 b4 40 a3 0c b5 d2 af 93 98 28 fd 4a e3 79 4e 44 f9 4d f5 a6 31
    ed e4 2c 17 19 bf da bf 02 53 fe 51 75 be 89 8e 75 0e dc 53 37 0d 2b";

/// The client's Finished, under its handshake keys.
const CLIENT_FINISHED: &str = "17 03 03 00 35 75 ec 4d c2 38 cc e6 0b 29 80 44 a7 1e 21 9c
    56 cc 77 b0 51 7f e9 b9 3c 7a 4b fc 44 d8 7f 38 f8 03 38 ac
    98 fc 46 de b3 84 bd 1c ae ac ab 68 67 d7 26 c4 05 46";

/// The server's NewSessionTicket: its first record under the application keys.
const NEW_SESSION_TICKET: &str = "17 03 03 00 de 3a 6b 8f 90 41 4a 97
    d6 95 9c 34 87 68 0d e5 13 4a 2b 24 0e 6c ff ac 11 6e 95 d4 1d
    6a f8 f6 b5 80 dc f3 d1 1d 63 c7 58 db 28 9a 01 59 40 25 2f 55
    71 3e 06 1d c1 3e 07 88 91 a3 8e fb cf 57 53 ad 8e f1 70 ad 3c
    73 53 d1 6d 9d a7 73 b9 ca 7f 2b 9f a1 b6 c0 d4 a3 d0 3f 75 e0
    9c 30 ba 1e 62 97 2a c4 6f 75 f7 b9 81 be 63 43 9b 29 99 ce 13
    06 46 15 13 98 91 d5 e4 c5 b4 06 f1 6e 3f c1 81 a7 7c a4 75 84
    00 25 db 2f 0a 77 f8 1b 5a b0 5b 94 c0 13 46 75 5f 69 23 2c 86
    51 9d 86 cb ee ac 87 aa c3 47 d1 43 f9 60 5d 64 f6 50 db 4d 02
    3e 70 e9 52 ca 49 fe 51 37 12 1c 74 bc 26 97 68 7e 24 87 46 d6
    df 35 30 05 f3 bc e1 86 96 12 9c 81 53 55 6b 3b 6c 67 79 b3 7b
    f1 59 85 68 4f";

/// The client's 50 bytes of application data (00 01 .. 31), its first application record.
const CLIENT_DATA: &str = "17 03 03 00 43 a2 3f 70 54 b6 2c 94 d0 af fa fe 82 28 ba 55
    cb ef ac ea 42 f9 14 aa 66 bc ab 3f 2b 98 19 a8 a5 b4 6b 39
    5b d5 4a 9a 20 44 1e 2b 62 97 4e 1f 5a 62 92 a2 97 70 14 bd
    1e 3d ea e6 3a ee bb 21 69 49 15 e4";

/// The server's answer (the same 50 bytes), its second application record.
const SERVER_DATA: &str = "17 03 03 00 43 2e 93 7e 11 ef 4a c7 40 e5 38 ad 36 00 5f c4
    a4 69 32 fc 32 25 d0 5f 82 aa 1b 36 e3 0e fa f9 7d 90 e6 df
    fc 60 2d cb 50 1a 59 a8 fc c4 9c 4b f2 e5 f0 a2 1c 00 47 c2
    ab f3 32 54 0d d0 32 e1 67 c2 95 5d";

/// The trace in the order its records were sent, each at its own millisecond.
pub(crate) fn trace() -> Vec<(Sender, Vec<u8>, At)> {
    [
        (Sender::Client, CLIENT_HELLO),
        (Sender::Server, SERVER_HELLO),
        (Sender::Server, SERVER_FLIGHT),
        (Sender::Client, CLIENT_FINISHED),
        (Sender::Server, NEW_SESSION_TICKET),
        (Sender::Client, CLIENT_DATA),
        (Sender::Server, SERVER_DATA),
    ]
    .into_iter()
    .enumerate()
    .map(|(n, (s, h))| {
        let at = At {
            ts_ns: (n as u64 + 1) * 1_000_000,
            frame: n as u64 + 1,
        };
        (s, hex(h), at)
    })
    .collect()
}

/// What came out, per sender: the data (with the frame of each piece) and the bytes said missing.
#[derive(Debug, Default, PartialEq)]
struct Seen {
    data: [Vec<u8>; 2],
    frames: Vec<(Sender, u64)>,
    missing: [u64; 2],
}

fn side(s: Sender) -> usize {
    usize::from(s == Sender::Server)
}

/// Feeds the trace cut into pieces of `piece` bytes.
fn run(
    keys: Option<&KeyLog>,
    piece: usize,
    mangle: impl Fn(usize, &mut Vec<u8>),
) -> (Seen, TlsConnection) {
    let mut tls = TlsConnection::new();
    let mut seen = Seen::default();
    for (n, (sender, mut bytes, at)) in trace().into_iter().enumerate() {
        mangle(n, &mut bytes);
        for chunk in bytes.chunks(piece) {
            tls.feed(sender, chunk, at, keys, &mut |s, p| match p {
                Plaintext::Data(b, at) => {
                    seen.data[side(s)].extend_from_slice(b);
                    seen.frames.push((s, at.frame));
                }
                Plaintext::Missing(n, _) => seen.missing[side(s)] += n,
            });
        }
    }
    tls.finish();
    (seen, tls)
}

#[test]
fn every_record_of_the_trace_opens_with_its_key_log() {
    let keys = key_log();
    let payload: Vec<u8> = (0u8..=0x31).collect();
    let (seen, tls) = run(Some(&keys), usize::MAX, |_, _| {});
    assert_eq!(seen.data[0], payload, "the client's application data");
    assert_eq!(seen.data[1], payload, "the server's");
    assert_eq!(seen.frames, vec![(Sender::Client, 6), (Sender::Server, 7)]);
    let f = tls.facts();
    assert_eq!(f.version, Some(ProtocolVersion::TLS1_3));
    assert_eq!(f.cipher_suite, Some(CipherSuite(0x1301)));
    assert_eq!(f.keys, KeyStatus::Found);
    // The server's flight and ticket, the client's Finished, both data records.
    assert_eq!(
        (f.records_decrypted, f.records_failed, f.records_undecrypted),
        (5, 0, 0)
    );
    assert_eq!(f.plaintext_bytes, 100);
    assert_eq!(f.client_hello.map(|a| a.frame), Some(1));
    assert_eq!(
        f.handshake_done.map(|a| a.frame),
        Some(4),
        "the client's Finished"
    );
    assert_eq!(f.handshake_ns(), Some(3_000_000));
}

#[test]
fn where_the_bytes_are_cut_changes_nothing() {
    let keys = key_log();
    let (whole, _) = run(Some(&keys), usize::MAX, |_, _| {});
    for piece in [1, 2, 3, 5, 7, 64, 300] {
        let (cut, tls) = run(Some(&keys), piece, |_, _| {});
        assert_eq!(cut.data, whole.data, "pieces of {piece}");
        assert_eq!(cut.missing, [0, 0]);
        assert_eq!(tls.facts().records_decrypted, 5);
    }
}

#[test]
fn a_damaged_record_is_counted_never_handed_on() {
    let keys = key_log();
    // One bit of the client's data record flipped (in the ciphertext).
    let (seen, tls) = run(Some(&keys), usize::MAX, |n, b| {
        if n == 5 {
            b[20] ^= 1;
        }
    });
    assert!(seen.data[0].is_empty(), "nothing of it handed on");
    assert_eq!(seen.missing[0], 0x43 - 16);
    assert_eq!(
        seen.data[1],
        (0u8..=0x31).collect::<Vec<_>>(),
        "the server's still opens"
    );
    let f = tls.facts();
    assert_eq!((f.records_failed, f.failed_bytes), (1, 5 + 0x43));
    assert_eq!(f.first_failure.map(|a| a.frame), Some(6));
}

#[test]
fn secrets_of_another_handshake_open_nothing() {
    let other = KeyLog::parse(
        format!(
            "CLIENT_TRAFFIC_SECRET_0 {CLIENT_RANDOM} {}\nSERVER_TRAFFIC_SECRET_0 {CLIENT_RANDOM} {}\n\
             CLIENT_HANDSHAKE_TRAFFIC_SECRET {CLIENT_RANDOM} {}\nSERVER_HANDSHAKE_TRAFFIC_SECRET {CLIENT_RANDOM} {}\n",
            "11".repeat(32),
            "22".repeat(32),
            "33".repeat(32),
            "44".repeat(32)
        )
        .as_bytes(),
    );
    let (seen, tls) = run(Some(&other), usize::MAX, |_, _| {});
    assert_eq!(seen.data, [Vec::new(), Vec::new()]);
    let f = tls.facts();
    assert_eq!(f.records_decrypted, 0);
    assert_eq!(f.records_failed, 5);
    assert_eq!(f.plaintext_bytes, 0);
}

#[test]
fn only_the_application_secrets_still_open_the_application_data() {
    let app_only = KeyLog::parse(
        format!(
            "CLIENT_TRAFFIC_SECRET_0 {CLIENT_RANDOM} 9e40646ce79a7f9dc05af8889bce6552875afa0b06df0087f792ebb7c17504a5\n\
             SERVER_TRAFFIC_SECRET_0 {CLIENT_RANDOM} a11af9f05531f856ad47116b45a950328204b4f44bfb6b3a4b4f1f3fcb631643\n"
        )
        .as_bytes(),
    );
    let (seen, tls) = run(Some(&app_only), usize::MAX, |_, _| {});
    let payload: Vec<u8> = (0u8..=0x31).collect();
    assert_eq!(seen.data, [payload.clone(), payload]);
    let f = tls.facts();
    // The handshake records are not counted as failures: their secrets were not given.
    assert_eq!(
        (f.records_decrypted, f.records_failed, f.records_undecrypted),
        (3, 0, 2)
    );
}

#[test]
fn without_keys_the_handshake_and_the_timing_remain() {
    let (seen, mut tls) = run(None, usize::MAX, |_, _| {});
    assert_eq!(seen, Seen::default());
    let f = tls.facts().clone();
    assert_eq!(f.keys, KeyStatus::NoKeyLog);
    assert_eq!(f.version, Some(ProtocolVersion::TLS1_3));
    assert_eq!(f.handshake_done.map(|a| a.frame), Some(4));
    assert_eq!(f.records_undecrypted, 5);
    // The ticket came before any request; then one exchange, still open when the bytes ended.
    assert_eq!(f.unsolicited_records, 1);
    let x: Vec<_> = tls.take_exchanges().collect();
    assert_eq!(x.len(), 1);
    assert_eq!(x[0].request.frame, 6);
    assert_eq!(x[0].response_end.map(|a| a.frame), Some(7));
    assert_eq!(x[0].ended, ExchangeEnd::CaptureEnd);
    assert_eq!(x[0].response_time_ns(), None, "not known to be over");
}

#[test]
fn a_lost_record_is_skipped_and_the_next_one_found_by_its_number() {
    let keys = key_log();
    let mut tls = TlsConnection::new();
    let mut data = Vec::new();
    let mut missing = 0;
    for (n, (sender, bytes, at)) in trace().into_iter().enumerate() {
        let mut out = |s: Sender, p: Plaintext<'_>| match p {
            Plaintext::Data(b, _) if s == Sender::Server => data.extend_from_slice(b),
            Plaintext::Missing(n, _) => missing += n,
            _ => {}
        };
        if n == 4 {
            // The ticket's record is lost, and the server's data record arrives cut at its front.
            tls.gap(sender, bytes.len() as u64, at, &mut out);
            continue;
        }
        tls.feed(sender, &bytes, at, Some(&keys), &mut out);
    }
    assert_eq!(
        data,
        (0u8..=0x31).collect::<Vec<_>>(),
        "record 1 opened after the loss of 0"
    );
    assert_eq!(missing, 227);
    assert_eq!(tls.facts().gaps, 1);
}
