//! Frames of a capture read from several files, named in the file that holds them as well.
//!
//! Frame numbers in every report are the capture's: Wireshark's numbers in the files concatenated
//! (`mergecap -a`). Wireshark opens one file at a time, so when the capture is several files each frame a
//! report names also gets its file and its number there. This is done on the finished output, so that
//! every report (and any report added later) is covered alike: in JSON, beside every integer `frame`
//! field (`frame`, `request_frame`, `connection_first_frame`, ...) come `file` and `file_frame` (with the
//! same prefix: `request_file`, `request_file_frame`), and beside a `frames` list a `files` list of
//! `{file, frame}`; in text, `frame N` becomes `frame N (FILE #M)`, and tables, whose frame column keeps
//! the capture's numbers, are followed by the range of frames each file holds.

use pcapsleuth_analysis::CaptureFacts;
use serde_json::{Map, Value};

use crate::visible::visible;

/// Adds each frame's file and number in it to a JSON report (nothing for a capture of one file).
pub fn locate_frames_json(value: &mut Value, capture: &CaptureFacts) {
    if capture.files.len() < 2 {
        return;
    }
    match value {
        Value::Object(map) => {
            let mut added = Map::new();
            for (key, v) in map.iter() {
                if let (Some(prefix), Some(frame)) = (key.strip_suffix("frame"), v.as_u64()) {
                    if let Some((file, in_file)) = capture.locate(frame) {
                        added.insert(format!("{prefix}file"), Value::from(file.path.clone()));
                        added.insert(format!("{prefix}file_frame"), Value::from(in_file));
                    }
                }
                if key == "frames" {
                    if let Some(frames) = v.as_array() {
                        let files = frames
                            .iter()
                            .filter_map(Value::as_u64)
                            .filter_map(|f| capture.locate(f))
                            .map(|(file, in_file)| {
                                serde_json::json!({"file": file.path, "frame": in_file})
                            })
                            .collect();
                        added.insert("files".into(), Value::Array(files));
                    }
                }
            }
            for (key, v) in map.iter_mut() {
                // The capture's own list of files numbers frames already.
                if key != "files" {
                    locate_frames_json(v, capture);
                }
            }
            for (k, v) in added {
                map.entry(k).or_insert(v);
            }
        }
        Value::Array(items) => {
            for v in items {
                locate_frames_json(v, capture);
            }
        }
        _ => {}
    }
}

/// Adds each `frame N` its file and number in it, and the frames each file holds at the end (nothing for
/// a capture of one file).
pub fn locate_frames_text(text: &str, capture: &CaptureFacts) -> String {
    if capture.files.len() < 2 {
        return text.to_string();
    }
    const WORD: &str = "frame ";
    let mut out = String::with_capacity(text.len() + 64);
    let mut rest = text;
    while let Some(at) = rest.find(WORD) {
        let after = &rest[at + WORD.len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        let word_start = at == 0 || !rest.as_bytes()[at - 1].is_ascii_alphanumeric();
        out.push_str(&rest[..at + WORD.len() + digits]);
        if word_start && digits > 0 {
            if let Some((file, in_file)) =
                after[..digits].parse().ok().and_then(|f| capture.locate(f))
            {
                out.push_str(&format!(" ({} #{in_file})", visible(&file.path)));
            }
        }
        rest = &after[digits..];
    }
    out.push_str(rest);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!(
        "\nFrames are numbered across the {} files read as one capture (one after the other, in time order):\n",
        capture.files.len()
    ));
    for f in &capture.files {
        match f.frames {
            0 => out.push_str(&format!(
                "  {:>12}        {}\n",
                "no frames",
                visible(&f.path)
            )),
            n => out.push_str(&format!(
                "  {:>12}-{:<12} {}\n",
                f.first_frame,
                f.first_frame + n - 1,
                visible(&f.path)
            )),
        }
    }
    out
}
