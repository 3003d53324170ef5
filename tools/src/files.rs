//! The files the commands read and write: scenes (read with a located error), and outputs
//! (checked before the work, written atomically after it).

use crate::Failure;
use ndvm_components::input_file;
use ndvm_components::scene::{Scene, SceneError};
use std::path::{Path, PathBuf};

/// A scene file and the folder its relative paths are relative to. A malformed scene is
/// printed as `error: scene.ron:12:5: message` with the line under it (exit 1).
pub fn read_scene(path: &Path) -> Result<(Scene, PathBuf), Failure> {
    let text = input_file::read(path, input_file::TEXT_LIMIT)
        .map_err(|e| Failure::Usage(format!("cannot read {}: {e}", path.display())))?;
    let scene = Scene::from_ron(&text).map_err(|e| {
        say_raw!("{}", scene_error(&e, path, &text));
        Failure::Program
    })?;
    let base = path.parent().map_or_else(PathBuf::new, Path::to_path_buf);
    Ok((scene, base))
}

/// `error: scene.ron:12:5: message`, then the line with a marker under the column.
fn scene_error(e: &SceneError, path: &Path, text: &str) -> String {
    let mut out = format!(
        "error: {}:{}:{}: {}\n",
        path.display(),
        e.line,
        e.column,
        e.message
    );
    if let Some(snippet) = ndvm_systems::report::snippet::at(text, e.line, e.column) {
        out += &snippet;
        out.push('\n');
    }
    out
}

/// Where `ndvm fit` and `ndvm search` write when neither a flag nor the scene says:
/// `ndvm-out/<scene>/` in the working folder (`ndvm-out/` is in the repository's `.gitignore`),
/// `<scene>` the scene file's name without `.scene.ron` (or `.ron`), its bytes kept as they
/// are. A name that would leave `ndvm-out/` or share a folder with another (empty, `.`, `..`)
/// gets a `_` before it, as does one that already starts with `_`: distinct names, distinct
/// folders.
pub fn default_out(scene: &Path) -> PathBuf {
    let name = scene.file_name().unwrap_or(scene.as_os_str());
    let bytes = name.as_encoded_bytes();
    let stem = (bytes.strip_suffix(b".scene.ron"))
        .or_else(|| bytes.strip_suffix(b".ron"))
        .unwrap_or(bytes);
    let plain = !matches!(stem, b"" | b"." | b"..") && !stem.starts_with(b"_");
    let mut folder = if plain { Vec::new() } else { b"_".to_vec() };
    folder.extend_from_slice(stem);
    Path::new(DEFAULT_OUT).join(os_string(folder))
}

/// Bytes of an `OsStr` (cut at an ASCII boundary) back as a name.
#[cfg(unix)]
fn os_string(bytes: Vec<u8>) -> std::ffi::OsString {
    std::os::unix::ffi::OsStringExt::from_vec(bytes)
}

#[cfg(not(unix))]
fn os_string(bytes: Vec<u8>) -> std::ffi::OsString {
    String::from_utf8_lossy(&bytes).into_owned().into()
}

/// The folder [`default_out`] writes under.
pub const DEFAULT_OUT: &str = "ndvm-out";

/// Creates `dir` (and its parents) for outputs, or says why it cannot.
pub fn create_folder(dir: &Path) -> Result<(), Failure> {
    std::fs::create_dir_all(dir).map_err(|e| {
        Failure::Usage(format!(
            "cannot create the output folder {}: {e}",
            dir.display()
        ))
    })
}

/// Fails unless a file can be created beside `path` (its folder exists and is writable).
pub fn check_writable(path: &Path) -> Result<(), Failure> {
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !folder.is_dir() {
        return Err(Failure::Usage(format!(
            "cannot write {}: the folder {} does not exist",
            path.display(),
            folder.display()
        )));
    }
    check_replaceable(path)?;
    let probe = folder.join(format!(".ndvm-write-check.{}", std::process::id()));
    std::fs::File::create(&probe)
        .and_then(|_| std::fs::remove_file(&probe))
        .map_err(|e| Failure::Usage(format!("cannot write {}: {e}", path.display())))
}

/// Fails when `path` exists and is not a regular file ([`ndvm_systems::folder::check_replaceable`]).
pub fn check_replaceable(path: &Path) -> Result<(), Failure> {
    ndvm_systems::folder::check_replaceable(path).map_err(Failure::Usage)
}

/// Writes `bytes` whole: a temporary file renamed over `path`
/// ([`ndvm_systems::folder::write_atomically`]).
pub fn write_atomically(path: &Path, bytes: impl AsRef<[u8]>) -> Result<(), Failure> {
    ndvm_systems::folder::write_atomically(path, bytes).map_err(Failure::Usage)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_folders_stay_inside_ndvm_out_and_differ_per_name() {
        let of = |name: &str| default_out(Path::new(name));
        assert_eq!(of("scenes/decay.scene.ron"), Path::new("ndvm-out/decay"));
        assert_eq!(of("decay.ron"), Path::new("ndvm-out/decay"));
        assert_eq!(of("notes"), Path::new("ndvm-out/notes"));
        // Every folder is one plain name inside `ndvm-out/`: never `..`, `.` or empty.
        let cases = [
            ("...scene.ron", "_.."),
            ("...ron", "_.."),
            ("..", "_.."),
            (".scene.ron", "_"),
            (".ron", "_"),
            (".", "_."),
            ("_", "__"),
            ("_..", "__.."),
            ("__", "___"),
            ("a/", "a"),
        ];
        for (name, want) in cases {
            assert_eq!(of(name), Path::new("ndvm-out").join(want), "{name}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn names_that_are_not_utf8_keep_their_bytes() {
        use std::os::unix::ffi::OsStrExt;
        let a = default_out(Path::new(std::ffi::OsStr::from_bytes(b"s\xff.scene.ron")));
        let b = default_out(Path::new(std::ffi::OsStr::from_bytes(b"s\xfe.scene.ron")));
        assert_ne!(a, b);
        assert_eq!(a.file_name().map(|n| n.as_bytes()), Some(&b"s\xff"[..]));
    }
}
