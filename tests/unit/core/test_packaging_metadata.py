"""The package's build metadata in the form current setuptools accepts without a deprecation.

Why: setuptools deprecates the `license = {text = ...}` table (removal announced for
2027-02-18) and printed that warning on every fresh `make demo` / `make test` install. PEP 639
puts an SPDX expression in `license`, which setuptools reads from version 77 on.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).parents[3] / "pyproject.toml"


def test_license_is_an_spdx_expression_with_a_setuptools_that_reads_it():
    # Given the project's pyproject.toml
    data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    # Then the license is a plain SPDX string (not the deprecated table) ...
    assert data["project"]["license"] == "Apache-2.0"
    # ... and the build backend is pinned to a setuptools that understands it
    assert "setuptools>=77" in data["build-system"]["requires"]
