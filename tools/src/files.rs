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
/// `<scene>` the scene file's name without `.scene.ron`.
pub fn default_out(scene: &Path) -> PathBuf {
    let name = scene
        .file_name()
        .map_or_else(|| "scene".to_string(), |n| n.to_string_lossy().into_owned());
    let stem = name
        .strip_suffix(".scene.ron")
        .or_else(|| name.strip_suffix(".ron"))
        .unwrap_or(&name);
    Path::new(DEFAULT_OUT).join(stem)
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

/// Fails when `path` exists and is not a regular file: an output replaces only a regular file,
/// never a symbolic link (whose target it would write), a device, a FIFO or a folder.
pub fn check_replaceable(path: &Path) -> Result<(), Failure> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.file_type().is_file() => {
            let what = if m.file_type().is_symlink() {
                "a symbolic link"
            } else if m.is_dir() {
                "a folder"
            } else {
                "not a regular file (a device, a FIFO or a socket)"
            };
            Err(Failure::Usage(format!(
                "cannot write {}: it is {what}; outputs replace only regular files",
                path.display()
            )))
        }
        _ => Ok(()),
    }
}

/// Writes `bytes` to a temporary file beside `path`, then renames it over `path`: an interrupted
/// write never leaves a half-written file, nor destroys the previous one. Only a regular file is
/// replaced ([`check_replaceable`]).
pub fn write_atomically(path: &Path, bytes: impl AsRef<[u8]>) -> Result<(), Failure> {
    check_replaceable(path)?;
    let fail = |e: std::io::Error| Failure::Usage(format!("cannot write {}: {e}", path.display()));
    let name = path
        .file_name()
        .map_or_else(|| "out".to_string(), |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes.as_ref())?;
        f.sync_all()
    })();
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(fail(e));
    }
    Ok(())
}
