//! Reading input files under a size limit.
//!
//! Programs, scenes, bindings, candidate streams and data files come from users (or from a
//! model proposing candidates): a path to `/dev/zero`, a runaway generator or a mistaken
//! multi-gigabyte file must give a clean error, not exhaust memory. Every input file is read
//! through [`read`], which stops one byte past its limit. The limits are in `docs/limits.md`.

use std::io::Read;
use std::path::Path;

/// Bytes read at a time.
const CHUNK: usize = 64 << 10;

/// Programs, scenes, bindings files and candidate streams: 64 MiB.
pub const TEXT_LIMIT: u64 = 64 << 20;

/// Data files (CSV data, CSV matrices): 1 GiB.
pub const DATA_LIMIT: u64 = 1 << 30;

/// The whole of `path` as UTF-8 text, or an error saying why not (it cannot be read, is over
/// `limit` bytes, or is not UTF-8).
pub fn read(path: &Path, limit: u64) -> Result<String, String> {
    check_kind(path)?;
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    read_from(file, limit)
}

/// Inputs are files: a FIFO or a socket would block the read (and the process, deaf to its
/// first Ctrl-C) until something writes to it, forever when nothing does. Devices are read
/// (`/dev/zero` ends at its first byte, `/dev/null` is empty).
pub fn check_kind(path: &Path) -> Result<(), String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if let Ok(meta) = std::fs::metadata(path) {
            let t = meta.file_type();
            let kind = if t.is_fifo() {
                "a FIFO"
            } else if t.is_socket() {
                "a socket"
            } else {
                return Ok(());
            };
            return Err(format!(
                "it is {kind}, not a file: reading it would wait for a writer (give a file)"
            ));
        }
    }
    Ok(())
}

/// Everything `reader` gives, up to `limit` bytes, as UTF-8 text. It is read in chunks, and a
/// NUL byte — never in text, always in `/dev/zero` or a binary file — ends it at once, before the
/// limit's worth of memory is taken (`/dev/zero` as a data file once took 2.6 GB to refuse).
pub fn read_from(reader: impl Read, limit: u64) -> Result<String, String> {
    let mut bytes = Vec::new();
    let mut reader = reader.take(limit + 1);
    let mut chunk = vec![0u8; CHUNK];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.to_string()),
        };
        if let Some(i) = chunk[..n].iter().position(|&b| b == 0) {
            return Err(format!("not text (a NUL byte at byte {})", bytes.len() + i));
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
    if bytes.len() as u64 > limit {
        return Err(format!(
            "larger than the {} limit for this kind of file",
            size(limit)
        ));
    }
    String::from_utf8(bytes)
        .map_err(|e| format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()))
}

fn size(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{} GiB", bytes >> 30)
    } else {
        format!("{} MiB", bytes >> 20)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nul_byte_ends_the_read_at_once() {
        // An endless source of zeros (as `/dev/zero`) is refused within the first chunk.
        let e = read_from(std::io::repeat(0), DATA_LIMIT).expect_err("not text");
        assert_eq!(e, "not text (a NUL byte at byte 0)");
        let mut text = vec![b'x'; CHUNK + 5];
        text.push(0);
        let e = read_from(&text[..], TEXT_LIMIT).expect_err("not text");
        assert_eq!(e, format!("not text (a NUL byte at byte {})", CHUNK + 5));
        if std::path::Path::new("/dev/zero").exists() {
            let e = read(std::path::Path::new("/dev/zero"), DATA_LIMIT).expect_err("not text");
            assert!(e.starts_with("not text"), "{e}");
        }
    }

    #[test]
    fn stops_one_byte_past_the_limit() {
        assert_eq!(read_from(&b"(+ 1 2)"[..], 7).as_deref(), Ok("(+ 1 2)"));
        let e = read_from(std::io::repeat(b' ').take(u64::MAX), 1 << 20).expect_err("endless");
        assert_eq!(e, "larger than the 1 MiB limit for this kind of file");
        let e = read_from(&[0xff, 0xfe][..], 10).expect_err("binary");
        assert!(e.contains("not UTF-8"), "{e}");
    }
}
