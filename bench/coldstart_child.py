"""One Lambda cold start, as the function lives it: a fresh interpreter imports the handler module
(Lambda's init phase), then handles one event (the first invocation, which creates the AWS clients,
validates the environment and pays every import deferred to first use), then the same event again
(a warm invocation: what every later event costs).

Run by bench/bench_coldstart.py with the function's environment, AWS_ENDPOINT_URL pointing at a
local moto server that holds the run's state, and the event on stdin; prints one JSON line.
Imports nothing but the standard library before the handler, so nothing is loaded for it.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
import uuid


class Context:
    """The attributes Powertools and the handlers read from a Lambda context."""

    def __init__(self, function_name: str) -> None:
        self.function_name = function_name
        self.memory_limit_in_mb = 512
        self.invoked_function_arn = f"arn:aws:lambda:us-west-2:123456789012:function:{function_name}"
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = "coldstart"

    def get_remaining_time_in_millis(self) -> int:
        return 300_000


def _point_amp_at_stub() -> None:
    """ClusterMetrics' AMP workspace, reached at the bench's stub (COLDSTART_AMP_ENDPOINT) instead
    of aps-workspaces.<region>.amazonaws.com: the same AmpWorkspace, signed with the function's
    own botocore session, as `clients.metrics_source` builds it. Only modules the handler already
    imported are used, except aws.prometheus, which ClusterMetrics imports on its first call."""
    endpoint = os.environ.get("COLDSTART_AMP_ENDPOINT")
    if not endpoint or "hyperpod_perf.aws.clients" not in sys.modules:
        return
    clients = sys.modules["hyperpod_perf.aws.clients"]

    def metrics_source(workspace_id: str, region: str | None) -> object:
        from hyperpod_perf.aws.prometheus import AmpWorkspace

        session = clients.botocore_session()
        return AmpWorkspace(
            workspace_id,
            region=region or session.get_config_variable("region"),
            credentials=session.get_credentials(),
            endpoint=endpoint,
        )

    clients.override("metrics_source", metrics_source)


def main() -> None:
    module_name, function_name = sys.argv[1], sys.argv[2]
    invocations = int(sys.argv[3]) if len(sys.argv) > 3 else 2  # 0: import only (instruction counts)
    event = json.loads(sys.stdin.read())
    before = set(sys.modules)
    wall, cpu = time.perf_counter(), time.process_time()
    module = importlib.import_module(module_name)
    imported = (time.perf_counter(), time.process_time())
    after_import = set(sys.modules)
    _point_amp_at_stub()
    imported = (time.perf_counter(), time.process_time())  # the set-up above is not counted
    if invocations > 0:
        module.handler(event, Context(function_name))
    first = (time.perf_counter(), time.process_time())
    after_first = set(sys.modules)
    if invocations > 1:
        module.handler(event, Context(function_name))
    warm = (time.perf_counter(), time.process_time())
    print(
        json.dumps(
            {
                "import_ms": (imported[0] - wall) * 1000,
                "first_ms": (first[0] - imported[0]) * 1000,
                "warm_ms": (warm[0] - first[0]) * 1000,
                "import_cpu_ms": (imported[1] - cpu) * 1000,
                "first_cpu_ms": (first[1] - imported[1]) * 1000,
                "warm_cpu_ms": (warm[1] - first[1]) * 1000,
                "handler_file": module.__file__,
                "modules_at_import": sorted(after_import - before),
                "modules_at_first_call": sorted(after_first - after_import),
            }
        )
    )


if __name__ == "__main__":
    main()
