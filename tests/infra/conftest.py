"""Synthesize the stack ONCE per test session with the example configuration.

Why once: a CDK synth costs seconds (jsii + asset hashing); every infra test reads the same
cloud assembly. Bundling is skipped (`aws:cdk:bundling-stacks` = []) so synth stays offline: the
dependencies layer's pip install never runs here.
"""

from __future__ import annotations

import pytest
from infra_synth import Synth, example_context, synthesize


@pytest.fixture(scope="session")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize(tmp_path_factory.mktemp("cdk.out"), example_context())
