//! Reading input files under a size limit.
//!
//! Programs, scenes, bindings, candidate streams and data files come from users (or from a
//! model proposing candidates): a path to `/dev/zero`, a runaway generator or a mistaken
//! multi-gigabyte file must give a clean error, not exhaust memory. Every input file is read
//! through [`read`], which stops one byte past its limit. The limits are in `docs/limits.md`.

use std::io::Read;
use std::path::Path;

/// Programs, scenes, bindings files and candidate streams: 64 MiB.
pub const TEXT_LIMIT: u64 = 64 << 20;

/// Data files (CSV data, CSV matrices): 1 GiB.
pub const DATA_LIMIT: u64 = 1 << 30;

/// The whole of `path` as UTF-8 text, or an error saying why not (it cannot be read, is over
/// `limit` bytes, or is not UTF-8).
pub fn read(path: &Path, limit: u64) -> Result<String, String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    read_from(file, limit)
}

/// Everything `reader` gives, up to `limit` bytes, as UTF-8 text.
pub fn read_from(reader: impl Read, limit: u64) -> Result<String, String> {
    let mut bytes = Vec::new();
    reader
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
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
    fn stops_one_byte_past_the_limit() {
        assert_eq!(read_from(&b"(+ 1 2)"[..], 7).as_deref(), Ok("(+ 1 2)"));
        let e = read_from(std::io::repeat(0).take(u64::MAX), 1 << 20).expect_err("endless");
        assert_eq!(e, "larger than the 1 MiB limit for this kind of file");
        let e = read_from(&[0xff, 0xfe][..], 10).expect_err("binary");
        assert!(e.contains("not UTF-8"), "{e}");
    }
}
