"""Facts the benchmarks need from the CDK stack's settings, read in a subprocess.

Why a subprocess: `infra.lambda_defaults` imports aws_cdk, which starts a jsii Node process that
would stay alive beside the timed benchmarks. The numbers come from the same constants the stack
deploys with (function memory, asset excludes, the layer's pip command), so the bench cannot
drift from the deployment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from typing import Any

from bench.common import project_root

_SCRIPT = """
import json, sys
sys.path.insert(0, ".")
from infra import lambda_defaults as d
from infra.constructs.functions import PipTargetBundler
print(json.dumps({
    "memory_mb": {name: s.memory_mb for name, s in d.FUNCTION_SIZING.items()},
    "architecture": d.ARCHITECTURE.name,
    "code_asset_excludes": list(d.CODE_ASSET_EXCLUDES),
    "layer_requirements": list(d.LAYER_REQUIREMENTS),
    "layer_command": PipTargetBundler(d.LAYER_REQUIREMENTS).command("LAYER_OUT")[1:],
}))
"""


@cache
def infra_facts() -> dict[str, Any]:
    env = {**os.environ, "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20"}
    completed = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        cwd=project_root(),
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"reading infra.lambda_defaults failed: {completed.stderr[-2000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])
