"""The docstrings' examples run (those of an extra that is not installed are skipped), and the
type stubs name what the module has."""

import doctest
import importlib
import pathlib

import pytest

import ndvm


@pytest.mark.parametrize(
    "module, needs",
    [
        ("ndvm", None),
        ("ndvm.jax", ("jax",)),
        ("ndvm.torch", ("torch",)),
        ("ndvm.ray", ("ray",)),
        ("ndvm.sklearn", ("sklearn",)),
        ("ndvm.dynamics", ("sklearn", "scipy")),
    ],
)
def test_docstring_examples(module, needs):
    for extra in needs or ():
        pytest.importorskip(extra)
    m = importlib.import_module(module)
    result = doctest.testmod(m, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_the_stubs_cover_the_public_api():
    stub = (pathlib.Path(ndvm.__file__).parent / "__init__.pyi").read_text()
    for name in ndvm.__all__:
        assert f"class {name}" in stub or f"def {name}" in stub, name
