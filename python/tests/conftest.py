"""Shared by the Python tests: the repository's paths, the reference data and the CLI."""

import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TESTDATA = pathlib.Path(os.environ.get("NDVM_TEST_DATA", ROOT / "testdata"))


def oracle_programs():
    text = (TESTDATA / "conformance" / "oracle_refs.json").read_text()
    # Python's json writes non-finite numbers bare; none of the used fields need them.
    text = text.replace("-Infinity", "null").replace("Infinity", "null").replace("NaN", "null")
    return json.loads(text)["programs"]


def ndvm_bin():
    """The `ndvm` binary CI built (target/debug or target/release; NDVM_BIN overrides)."""
    if "NDVM_BIN" in os.environ:
        return os.environ["NDVM_BIN"]
    for profile in ("debug", "release"):
        p = ROOT / "target" / profile / "ndvm"
        if p.exists():
            return str(p)
    pytest.fail("no ndvm binary: run `cargo build -p ndvm-cli` first")


def ndvm_run_json(args):
    out = subprocess.run([ndvm_bin(), "run", *args, "--json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)
