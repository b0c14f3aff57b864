"""The client's version has one source, pyproject.toml: the installed metadata, the package's
__version__ and `goldset --version` all say it."""

import importlib.metadata
import tomllib
from pathlib import Path

import pytest

import goldset_client
from goldset_client.cli import main

PYPROJECT = Path(__file__).resolve().parents[2] / "clients" / "python" / "pyproject.toml"


def test_the_version_is_pyprojects_as_the_package_metadata_says_it():
    declared = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["version"]
    assert goldset_client.__version__ == importlib.metadata.version("goldset-client") == declared


def test_goldset_version_prints_it(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"goldset {goldset_client.__version__}\n"
