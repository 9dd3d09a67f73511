"""Synthesize the stack ONCE per test session with the example configuration.

Why once: a CDK synth costs seconds (jsii + asset hashing); every infra test reads the same
cloud assembly. Bundling is skipped (`aws:cdk:bundling-stacks` = []) so synth stays offline: the
dependencies layer's pip install never runs here.
"""

from __future__ import annotations

import json

import pytest
from infra_synth import STACK_NAME, Synth, example_context


@pytest.fixture(scope="session")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    import aws_cdk as cdk

    from infra.app import build_app

    outdir = tmp_path_factory.mktemp("cdk.out")
    context = example_context()
    app = cdk.App(outdir=str(outdir), context={"hyperpod-perf": context, "aws:cdk:bundling-stacks": []})
    build_app(app)
    error: str | None = None
    try:
        app.synth()
    except RuntimeError as exc:  # cdk-nag findings surface as a failed validation at synth
        error = str(exc)
    report_path = outdir / "validation-report.json"
    return Synth(
        template=json.loads((outdir / f"{STACK_NAME}.template.json").read_text()),
        error=error,
        validation_report=json.loads(report_path.read_text()) if report_path.exists() else {},
        metadata=json.loads((outdir / f"{STACK_NAME}.metadata.json").read_text()),
        context=context,
        outdir=outdir,
    )
