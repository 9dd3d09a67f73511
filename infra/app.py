#!/usr/bin/env python3
"""CDK entry point (`cdk.json` runs `.venv/bin/python infra/app.py`; `make venv` creates it).

Why the sys.path surgery: run as a script, Python puts `infra/` first on the path, where our
`constructs/` package would shadow the `constructs` library CDK itself imports. The repository
root (for `infra.*`) and `functions/` (for `hyperpod_perf`, which builds the Session document)
go on the path instead.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

_INFRA = Path(__file__).resolve().parent

sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _INFRA]
sys.path[:0] = [str(_INFRA.parent), str(_INFRA.parent / "functions")]
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk  # noqa: E402
from cdk_nag import AwsSolutionsChecks  # noqa: E402

from infra.config import (  # noqa: E402
    ALLOW_EMPTY_KEY,
    CONFIG_FILE_KEY,
    CONTEXT_KEY,
    ConfigError,
    allow_empty,
    app_config,
    require_cluster_and_recipient,
)
from infra.stack import HyperPodPerfStack  # noqa: E402

STACK_NAME = "HyperPodPerf"


def build_app(app: cdk.App | None = None) -> tuple[cdk.App, HyperPodPerfStack]:
    """The app with its one stack and the cdk-nag AwsSolutions checks (tests use this too).

    The configuration comes from the file `-c hyperpod-perf:config=FILE` names (DEPLOY.md) or, in
    tests, an object under `hyperpod-perf`. Raises ConfigError for a configuration that is invalid,
    or that names no cluster or no recipient without `-c hyperpod-perf:allowEmpty=true`."""
    app = app or cdk.App()
    config = app_config(app.node.try_get_context(CONFIG_FILE_KEY), app.node.try_get_context(CONTEXT_KEY))
    require_cluster_and_recipient(
        config, allowed_empty=allow_empty(app.node.try_get_context(ALLOW_EMPTY_KEY))
    )
    # Environment-agnostic on purpose: the CDK CLI always sets CDK_DEFAULT_REGION (and, with
    # credentials, CDK_DEFAULT_ACCOUNT); binding them would bake a literal region and account into
    # every ARN, so the template would change with whoever synthesizes it. Unbound, the ARNs carry
    # AWS::Region/AWS::AccountId/AWS::Partition and the deploy's account and region fill them.
    stack = HyperPodPerfStack(app, STACK_NAME, config=config)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app, stack


def main() -> None:
    try:
        app, _ = build_app()
    except ConfigError as error:
        sys.exit(str(error))
    app.synth()


if __name__ == "__main__":
    main()
