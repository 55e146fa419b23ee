//! Captures that cannot be mapped, read as a stream of windows: compressed files (gzip, zstd, xz and lz4,
//! told by their magic bytes whatever the name), pipes, and standard input.
//!
//! A thread of its own decompresses ahead into large buffers while the previous window is analysed, and
//! the buffers are recycled, so memory holds a few windows whatever the capture's size, and no temporary
//! copy is written. A window ends wherever the buffer filled, usually inside a record: the reader of a
//! window stops before that record ([`Tail::More`]), and the next window starts with the bytes from there
//! (copied into room kept free at the front of each buffer), so windows hand over exactly like splits.
//!
//! A pipe or standard input that is not a file (a live `tcpdump -w -`) may go quiet for any time: the
//! thread waits for it in steps, so that a run can be interrupted while it waits
//! ([`Stream::interrupt_with`]), and hands over what it holds of an uncompressed capture when the source
//! went quiet or the window has been filling for a second, so that what arrived is analysed before the
//! window is full (windows of any size give the same results).

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::{
    read_header, CaptureError, Chunk, Damage, DamageKind, FileId, Format, LateDamage, ReaderState,
    Tail, Timestamp,
};

/// How a capture file is compressed, from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Not compressed: a plain capture, streamed when it comes from a pipe or standard input.
    None,
    /// gzip (magic `1f 8b`); concatenated members are read as one stream, as `zcat` does.
    Gzip,
    /// Zstandard (magic `28 b5 2f fd`); several frames are one stream, and `zstd --long` windows are
    /// accepted.
    Zstd,
    /// xz (magic `fd 37 7a 58 5a 00`); several streams are one stream.
    Xz,
    /// LZ4's frame format (magic `04 22 4d 18`); several frames are one stream.
    Lz4,
}

impl Compression {
    /// The compression whose magic number `head` starts with.
    pub fn detect(head: &[u8]) -> Compression {
        match head {
            [0x1f, 0x8b, ..] => Compression::Gzip,
            [0x28, 0xb5, 0x2f, 0xfd, ..] => Compression::Zstd,
            [0xfd, b'7', b'z', b'X', b'Z', 0x00, ..] => Compression::Xz,
            [0x04, 0x22, 0x4d, 0x18, ..] => Compression::Lz4,
            _ => Compression::None,
        }
    }

    /// A short name: "gzip", "zstd", ...
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "uncompressed",
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
            Compression::Xz => "xz",
            Compression::Lz4 => "lz4",
        }
    }

    /// A decoder of this compression over `raw`. Concatenated members (`cat a.gz b.gz`, several zstd
    /// frames, several xz streams, several lz4 frames) are read as one stream, as `zcat` does.
    fn decoder(self, raw: Box<dyn Read + Send>) -> io::Result<Box<dyn Read + Send>> {
        Ok(match self {
            Compression::None => raw,
            Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(raw)),
            Compression::Zstd => {
                let mut d = zstd::stream::read::Decoder::new(raw)?;
                // Frames written with `zstd --long` need windows above the default limit.
                d.window_log_max(31)?;
                Box::new(d)
            }
            Compression::Xz => Box::new(liblzma::read::XzDecoder::new_multi_decoder(
                io::BufReader::with_capacity(1 << 16, raw),
            )),
            Compression::Lz4 => Box::new(lz4_flex::frame::FrameDecoder::new(raw)),
        })
    }
}

/// Capture bytes read at opening, enough for the header and the first record of any real capture.
const HEAD_BYTES: usize = 1 << 16;
/// Room kept at the front of each buffer for the record the previous window ended inside.
const HEADROOM: usize = 1 << 20;

/// Reads the first [`HEAD_BYTES`] of `decoder` into `head`; what was read before an error stays there.
fn read_head(decoder: &mut dyn Read, head: &mut Vec<u8>) -> io::Result<()> {
    decoder
        .take(HEAD_BYTES as u64)
        .read_to_end(head)
        .map(|_| ())
}

/// Counts the bytes read from the file, before decompression: progress through a compressed file.
struct Counted<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// How long the reading thread waits on a quiet pipe before it looks at the interrupt flag again: the
/// most an interrupted run waits for it.
const QUIET_STEP: Duration = Duration::from_millis(50);
/// An uncompressed window of a pipe is handed over, not full, when the pipe has been quiet this long...
const QUIET_AT_MOST: Duration = Duration::from_millis(250);
/// ... or when it has been filling for this long: a live capture is analysed as it arrives, and an
/// interrupted run has read all but the last second of it.
const FILLING_AT_MOST: Duration = Duration::from_secs(1);

/// Waits until `fd` has bytes to read (or its end, or an error, which the read then says) for at most
/// `step`: whether it has.
fn readable(fd: RawFd, step: Duration) -> bool {
    let mut poll = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = libc::c_int::try_from(step.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: one valid pollfd, for the length given; the descriptor is owned by the reader the
    // thread holds, so it stays open while polled.
    let ready = unsafe { libc::poll(&mut poll, 1, ms) };
    // An error of poll itself (EINTR) counts as readable: the read then blocks or says what is wrong.
    ready != 0
}

/// The descriptor of `file` if reading it may block for any time (a pipe, a FIFO, a socket, a
/// terminal): not a regular file or a block device.
fn may_wait(file: &impl AsRawFd) -> Option<RawFd> {
    let fd = file.as_raw_fd();
    // SAFETY: fstat fills a plain struct for a descriptor the caller holds open.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return None;
    }
    let kind = st.st_mode & libc::S_IFMT;
    (kind != libc::S_IFREG && kind != libc::S_IFBLK).then_some(fd)
}

/// What the reading thread watches besides the bytes: the interrupt flag, and the descriptor of an
/// uncompressed source that may go quiet.
struct Watch {
    interrupt: Option<Arc<AtomicBool>>,
    /// A window of this source is handed over before it is full (see [`FILLING_AT_MOST`]): an
    /// uncompressed source only, as a decoder may hold bytes it has not given yet.
    quiet_fd: Option<RawFd>,
}

impl Watch {
    fn interrupted(&self) -> bool {
        self.interrupt
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
    }
}

/// Why the reading thread handed a buffer over.
enum End {
    /// The window is full, or it was filling for long enough: more follows.
    More,
    /// The stream ended, with the error that ended it, if any.
    Ended(Option<io::Error>),
    /// The run was interrupted: the stream ends here, unread.
    Interrupted,
}

/// What the decompressing thread hands over: a buffer whose bytes `[HEADROOM, HEADROOM + len)` are
/// fresh, and why it was handed over.
struct Filled {
    buf: Vec<u8>,
    len: usize,
    end: End,
}

/// A capture read as a stream; see the module documentation.
pub struct Stream {
    path: PathBuf,
    compression: Compression,
    format: Format,
    initial: ReaderState,
    /// The header bytes before the first record (pcap file header, pcapng SHB and IDBs), for writers.
    preamble: Vec<u8>,
    first_ts: Option<Timestamp>,
    id: Option<FileId>,
    /// Size of the file as stored (compressed), when it is a file.
    stored_len: Option<u64>,
    /// Bytes of the file read so far.
    stored_read: Arc<AtomicU64>,
    /// The first bytes, read at opening; then the decoder, until the thread takes it.
    head: Vec<u8>,
    decoder: Option<Box<dyn Read + Send>>,
    /// What ended the stream within its first bytes (a small file cut short, garbage after its last
    /// member): the first window is then the last, and says it.
    head_end: Option<io::Error>,
    ahead: Option<Ahead>,
    /// The stream ended (the last window was handed out).
    ended: bool,
    /// Damage its source found besides the bytes (see [`Stream::from_raw`]).
    late_damage: Option<LateDamage>,
    /// How many files were merged by time into this stream (0: not a merge).
    merged: usize,
    /// The source's descriptor, if reading it may wait for any time (a pipe, standard input that is not
    /// a file).
    waits_on: Option<RawFd>,
    /// Set to end the reading early ([`Stream::interrupt_with`]).
    interrupt: Option<Arc<AtomicBool>>,
    /// The reading ended because the interrupt flag was set.
    interrupted: bool,
}

/// The channels to the decompressing thread. Dropping them ends the thread at its next hand-over; it is
/// not waited for, as it may be blocked reading a pipe that never ends (a live `tcpdump -w -`).
struct Ahead {
    filled: Receiver<Filled>,
    free: SyncSender<Vec<u8>>,
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream")
            .field("path", &self.path)
            .field("compression", &self.compression)
            .field("format", &self.format)
            .finish()
    }
}

/// One window of a stream: a chunk of its bytes, owned.
struct Window {
    buf: Vec<u8>,
    start: usize,
    base: u64,
    tail: Tail,
    /// What ended the stream early, reported after the window's records.
    damage: Vec<Damage>,
}

impl Window {
    /// The window's bytes, to plan and read.
    fn chunk(&self, format: Format) -> Chunk<'_> {
        Chunk {
            bytes: &self.buf[self.start..],
            base: self.base,
            format,
            tail: self.tail,
        }
    }

    /// The bytes from capture offset `offset` to the window's end: what the next window starts with.
    fn rest_from(&self, offset: u64) -> &[u8] {
        let at = usize::try_from(offset.saturating_sub(self.base)).unwrap_or(usize::MAX);
        self.buf[self.start..].get(at..).unwrap_or(&[])
    }

    fn is_last(&self) -> bool {
        self.tail == Tail::Final
    }
}

/// What [`Stream::read_windows`] hands over for each window.
pub struct StreamWindow<'a> {
    /// The window's bytes.
    pub chunk: Chunk<'a>,
    /// Where reading stands: the state the window's first record is read in.
    pub start: ReaderState,
    /// What ended the stream early after this window's bytes (the last window only), for the caller to
    /// report after the window's records.
    pub damage: &'a [Damage],
    /// Bytes of the stored (compressed) file read so far, for progress.
    pub stored_read: u64,
}

impl Stream {
    /// Opens `path` (`-` for standard input) and reads the capture's header through its decompression.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, CaptureError> {
        let path = path.as_ref().to_path_buf();
        let open_error = |source| CaptureError::Open {
            path: path.clone(),
            source,
        };
        let (raw, id, stored_len, waits_on): (Box<dyn Read + Send>, _, _, _) =
            if path.as_os_str() == "-" {
                let stdin = io::stdin();
                let waits_on = may_wait(&stdin);
                (Box::new(stdin), FileId::of_stdin(), None, waits_on)
            } else {
                let file = File::open(&path).map_err(open_error)?;
                let meta = file.metadata().map_err(open_error)?;
                let len = meta.is_file().then_some(meta.len());
                let waits_on = may_wait(&file);
                (Box::new(file), Some(FileId::of(&meta)), len, waits_on)
            };
        let mut stream = Self::from_raw(path, raw, id, stored_len, None)?;
        stream.waits_on = waits_on;
        Ok(stream)
    }

    /// Several mapped captures merged by time into one stream, as `mergecap` merges files by default
    /// (see [`crate::merge`]). The files must share a preamble ([`crate::CaptureSet::preamble`]).
    pub(crate) fn merged(inputs: Vec<crate::Capture>) -> Result<Self, CaptureError> {
        let path = PathBuf::from(format!("{} files merged by time", inputs.len()));
        let stored_len = inputs.iter().map(|c| c.len()).sum();
        let files = inputs.len();
        let merge = crate::merge::Merge::new(inputs);
        let damage = merge.damage();
        let mut stream =
            Self::from_raw(path, Box::new(merge), None, Some(stored_len), Some(damage))?;
        stream.merged = files;
        Ok(stream)
    }

    /// Reads the capture's header from `raw` through the compression its first bytes show.
    /// `late_damage` holds damage found by the source itself (a merged file cut short), reported with
    /// the last window.
    fn from_raw(
        path: PathBuf,
        raw: Box<dyn Read + Send>,
        id: Option<FileId>,
        stored_len: Option<u64>,
        late_damage: Option<LateDamage>,
    ) -> Result<Self, CaptureError> {
        let open_error = |source| CaptureError::Open {
            path: path.clone(),
            source,
        };
        let stored_read = Arc::new(AtomicU64::new(0));
        let mut raw = Counted {
            inner: raw,
            read: stored_read.clone(),
        };
        let mut magic = Vec::with_capacity(6);
        (&mut raw)
            .take(6)
            .read_to_end(&mut magic)
            .map_err(open_error)?;
        if magic.is_empty() {
            return Err(CaptureError::Empty { path });
        }
        let compression = Compression::detect(&magic);
        let raw: Box<dyn Read + Send> = Box::new(io::Cursor::new(magic).chain(raw));
        let mut decoder = compression.decoder(raw).map_err(open_error)?;
        let mut head = Vec::with_capacity(HEAD_BYTES);
        // A stream that fails within its first bytes (a small file cut short, garbage after its last
        // member) is read up to where it failed, as a larger one is: `read_to_end` keeps what it read.
        let head_end = read_head(&mut decoder, &mut head).err();
        if head.is_empty() {
            return Err(match head_end {
                Some(e) => CaptureError::Decompress {
                    path,
                    compression: compression.name(),
                    source: e,
                },
                None => CaptureError::Empty { path },
            });
        }
        let (format, initial) = read_header(&path, &head).map_err(|e| match compression {
            Compression::None => e,
            _ => e.inside(compression.name()),
        })?;
        let first_ts = Chunk {
            bytes: &head,
            base: 0,
            format,
            tail: Tail::More,
        }
        .reader_after(initial.clone(), head.len() as u64)
        .next_record()
        .map(|r| r.ts);
        let preamble_len = usize::try_from(initial.offset)
            .unwrap_or(usize::MAX)
            .min(head.len());
        Ok(Stream {
            path,
            compression,
            format,
            preamble: head[..preamble_len].to_vec(),
            initial,
            first_ts,
            id,
            stored_len,
            stored_read,
            head,
            decoder: head_end.is_none().then_some(decoder),
            head_end,
            ahead: None,
            ended: false,
            late_damage,
            merged: 0,
            waits_on: None,
            interrupt: None,
            interrupted: false,
        })
    }

    /// Ends the reading early when `flag` is set (a run's interrupt flag): the window being read is not
    /// handed over, and [`Stream::read_windows`] returns at once, even while a pipe is quiet (it is
    /// looked at every 50 ms while the source is waited for). [`Stream::interrupted`] then says so.
    pub fn interrupt_with(&mut self, flag: Option<Arc<AtomicBool>>) {
        self.interrupt = flag;
    }

    /// Whether the reading ended because the flag of [`Stream::interrupt_with`] was set, before the
    /// stream's end.
    pub fn interrupted(&self) -> bool {
        self.interrupted
    }

    /// The path it was opened from (`-` for standard input; a description for a merge of several files).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How the source's bytes are compressed.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// "pcap (µs, little-endian, link type 1), zstd-compressed", or "..., streamed" for a pipe.
    pub fn describe(&self) -> String {
        if self.merged > 0 {
            return format!(
                "{}, {} files merged by time",
                self.format.describe(),
                self.merged
            );
        }
        match self.compression {
            Compression::None => format!("{}, streamed", self.format.describe()),
            c => format!("{}, {}-compressed", self.format.describe(), c.name()),
        }
    }

    /// The capture's format, from its header.
    pub fn format(&self) -> Format {
        self.format
    }

    /// State before the first record.
    pub fn initial_state(&self) -> &ReaderState {
        &self.initial
    }

    /// The bytes a copy of this capture starts with (see [`crate::Capture::preamble`]).
    pub fn preamble(&self) -> &[u8] {
        &self.preamble
    }

    /// The Decryption Secrets Blocks before the first packet of a pcapng (none for classic pcap).
    pub fn decryption_secrets(&self) -> Vec<crate::DecryptionSecrets> {
        match self.format {
            Format::PcapNg => crate::pcapng::decryption_secrets(&self.preamble),
            Format::Pcap(_) => Vec::new(),
        }
    }

    /// Time of the first record, if the first bytes hold one.
    pub fn first_ts(&self) -> Option<Timestamp> {
        self.first_ts
    }

    /// The file's device and inode (`None` for standard input).
    pub fn file_id(&self) -> Option<FileId> {
        self.id
    }

    /// Size of the file as stored (compressed), if it is a regular file.
    pub fn stored_len(&self) -> Option<u64> {
        self.stored_len
    }

    /// How much of the stored file was read so far.
    pub fn stored_read(&self) -> u64 {
        self.stored_read.load(Ordering::Relaxed)
    }

    /// The first window (the bytes read at opening and what follows them); windows of `window` bytes
    /// are decompressed ahead from now on.
    fn first_window(&mut self, window: usize) -> Option<Window> {
        let head = std::mem::take(&mut self.head);
        self.start(window);
        self.next_window(&head, 0)
    }

    fn start(&mut self, window: usize) {
        let Some(decoder) = self.decoder.take() else {
            return;
        };
        let (filled_tx, filled) = sync_channel::<Filled>(1);
        let (free, free_rx) = sync_channel::<Vec<u8>>(2);
        let watch = Watch {
            interrupt: self.interrupt.clone(),
            quiet_fd: self
                .waits_on
                .filter(|_| self.compression == Compression::None),
        };
        let spawned = std::thread::Builder::new()
            .name("pcapsleuth-decompress".into())
            .spawn(move || fill_windows(decoder, &watch, window, &filled_tx, &free_rx));
        if spawned.is_ok() {
            self.ahead = Some(Ahead { filled, free });
        }
    }

    /// The next window: `carry` (the bytes the previous window ended inside a record with, from capture
    /// offset `base`) followed by freshly decompressed bytes. `None` once the stream has ended and
    /// nothing is carried.
    fn next_window(&mut self, carry: &[u8], base: u64) -> Option<Window> {
        if self.ended {
            return None;
        }
        let filled = match self.ahead.as_ref().map(|a| self.wait_for(&a.filled)) {
            Some(Ok(f)) => f,
            // The stream ended within its first bytes, or the thread could not start or died: it ends
            // here.
            _ => Filled {
                buf: Vec::new(),
                len: 0,
                end: End::Ended(self.head_end.take()),
            },
        };
        let Filled { mut buf, len, end } = filled;
        let end = match end {
            End::More => None,
            End::Ended(error) => Some(error),
            End::Interrupted => {
                self.ended = true;
                self.interrupted = true;
                return None;
            }
        };
        let (start, buf) = if carry.len() <= HEADROOM && buf.len() >= HEADROOM {
            let start = HEADROOM - carry.len();
            buf[start..HEADROOM].copy_from_slice(carry);
            buf.truncate(HEADROOM + len);
            (start, buf)
        } else {
            // A record longer than the headroom (or no buffer): one copy, rare.
            let fresh = buf.get(HEADROOM..HEADROOM + len).unwrap_or(&[]);
            let mut joined = Vec::with_capacity(carry.len() + fresh.len());
            joined.extend_from_slice(carry);
            joined.extend_from_slice(fresh);
            (0, joined)
        };
        let tail = if end.is_some() {
            self.ended = true;
            Tail::Final
        } else {
            Tail::More
        };
        let stream_end = base + (buf.len() - start) as u64;
        let mut damage: Vec<Damage> = end
            .flatten()
            .map(|e| Damage {
                input: 0,
                offset: stream_end,
                kind: if e.kind() == io::ErrorKind::UnexpectedEof {
                    DamageKind::CompressedCutShort {
                        compression: self.compression.name(),
                    }
                } else {
                    DamageKind::Unreadable {
                        reason: format!("{} stream: {e}", self.compression.name()),
                    }
                },
            })
            .into_iter()
            .collect();
        if let (Tail::Final, Some(late)) = (tail, &self.late_damage) {
            damage.extend(
                late.lock()
                    .map(|mut d| std::mem::take(&mut *d))
                    .unwrap_or_default(),
            );
        }
        if start == buf.len() && tail == Tail::Final && damage.is_empty() {
            return None; // nothing carried, nothing more
        }
        Some(Window {
            buf,
            start,
            base,
            tail,
            damage,
        })
    }

    /// Reads the whole stream window after window (`window` bytes each): `read` gets each window with the
    /// state reading stands in, reads its records, and returns where it stopped, which the next window
    /// starts from. An error from `read` stops the reading.
    pub fn read_windows<E>(
        &mut self,
        window: usize,
        mut read: impl FnMut(StreamWindow<'_>) -> Result<ReaderState, E>,
    ) -> Result<(), E> {
        let format = self.format;
        let mut start = self.initial.clone();
        let mut next = self.first_window(window);
        while let Some(w) = next {
            let end = read(StreamWindow {
                chunk: w.chunk(format),
                start,
                damage: &w.damage,
                stored_read: self.stored_read(),
            })?;
            next = if w.is_last() {
                None
            } else {
                self.next_window(w.rest_from(end.offset), end.offset)
            };
            start = end;
            self.recycle(w);
        }
        Ok(())
    }

    /// The next buffer the reading thread fills; while it waits (a quiet pipe, a slow decompression),
    /// the interrupt flag is looked at every [`QUIET_STEP`]: once set, the thread is left to end on its
    /// own (it may be blocked reading) and the stream ends as interrupted.
    fn wait_for(&self, filled: &Receiver<Filled>) -> Result<Filled, RecvTimeoutError> {
        loop {
            match filled.recv_timeout(QUIET_STEP) {
                Err(RecvTimeoutError::Timeout) if self.interrupt_set() => {
                    return Ok(Filled {
                        buf: Vec::new(),
                        len: 0,
                        end: End::Interrupted,
                    })
                }
                Err(RecvTimeoutError::Timeout) => {}
                got => return got,
            }
        }
    }

    fn interrupt_set(&self) -> bool {
        self.interrupt
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// Gives a window's buffer back for decompressing into again.
    fn recycle(&mut self, window: Window) {
        if let Some(a) = &self.ahead {
            let _ = a.free.try_send(window.buf);
        }
    }
}

/// The reading thread: fills buffers from `decoder` and hands them over until the stream ends, the run
/// is interrupted, or the reader is gone.
fn fill_windows(
    mut decoder: Box<dyn Read + Send>,
    watch: &Watch,
    window: usize,
    filled: &SyncSender<Filled>,
    free: &Receiver<Vec<u8>>,
) {
    loop {
        let mut buf = free
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(HEADROOM + window));
        buf.resize(HEADROOM + window, 0);
        let (len, end) = fill(&mut *decoder, watch, &mut buf[HEADROOM..]);
        let last = !matches!(end, End::More);
        if filled.send(Filled { buf, len, end }).is_err() || last {
            return;
        }
    }
}

/// Reads into `room` until it is full (or, from a quiet pipe, until it was filling long enough), the
/// stream ends, or the run is interrupted: how many bytes it read, and why it stopped.
fn fill(decoder: &mut dyn Read, watch: &Watch, room: &mut [u8]) -> (usize, End) {
    let mut len = 0;
    let mut since: Option<Instant> = None;
    let mut quiet = Duration::ZERO;
    loop {
        if watch.interrupted() {
            return (len, End::Interrupted);
        }
        let long_enough = since.is_some_and(|t| t.elapsed() >= FILLING_AT_MOST);
        let early = watch.quiet_fd.is_some();
        if early && (long_enough || (len > 0 && quiet >= QUIET_AT_MOST)) {
            return (len, End::More);
        }
        if let Some(fd) = watch.quiet_fd {
            if !readable(fd, QUIET_STEP) {
                quiet += QUIET_STEP;
                continue;
            }
            quiet = Duration::ZERO;
        }
        match decoder.read(&mut room[len..]) {
            Ok(0) => return (len, End::Ended(None)),
            Ok(n) => {
                len += n;
                since.get_or_insert_with(Instant::now);
                if len == room.len() {
                    return (len, End::More);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) if watch.interrupted() => return (len, End::Interrupted),
            Err(e) => return (len, End::Ended(Some(e))),
        }
    }
}
