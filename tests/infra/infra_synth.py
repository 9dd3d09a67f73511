"""Shared by the infra tests: the synth result type and the example configuration.

A module of its own (not conftest) so test modules can import it by a unique name.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
for entry in (REPO_ROOT, REPO_ROOT / "functions"):
    if str(entry) not in sys.path:
        sys.path.insert(0, str(entry))
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

EXAMPLE_CONTEXT = REPO_ROOT / "infra" / "example-context.json"
STACK_NAME = "HyperPodPerf"


@dataclass(frozen=True)
class Synth:
    """What one synth produced: the template, the nag outcome and the construct metadata."""

    template: dict[str, Any]
    error: str | None
    validation_report: dict[str, Any]
    metadata: dict[str, list[dict[str, Any]]]
    context: dict[str, Any]
    outdir: Path

    @property
    def resources(self) -> dict[str, dict[str, Any]]:
        return self.template["Resources"]

    def of_type(self, cfn_type: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.resources.items() if v["Type"] == cfn_type}


def example_context() -> dict[str, Any]:
    """infra/example-context.json as is: the whole file is the configuration object."""
    return json.loads(EXAMPLE_CONTEXT.read_text())


def synthesize(outdir: Path, context: dict[str, Any]) -> Synth:
    """Synthesize the app as `infra/app.py` builds it, bundling skipped (offline), nag outcome kept."""
    import aws_cdk as cdk

    from infra.app import build_app

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
