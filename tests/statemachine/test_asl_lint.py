"""statelint (PyPI) on statemachines/diagnose.asl.json with every ${...} filled with a plausible value.

Two deviations are known and deliberate; the test names them so that anything else fails:
- `ReaderConfig.InputType` ("JSON"): AWS requires it for a Distributed Map reading a JSON array with
  s3:getObject; statelint 3.1.0 predates the field.
- `ToleratedFailurePercentage: 100.0`: AWS accepts any number 0-100; statelint wants an integer, but
  moto's ASL grammar (the offline run) only parses a decimal there — `100` fails CreateStateMachine.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from hyperpod_perf_dev.localrun.deployment import asl_path

STATELINT = Path(sys.executable).with_name("statelint")
KNOWN = (
    'Field "InputType" not allowed in State Machine.States.Gather.Branches[0].States.'
    "CollectNodesDistributed.ItemReader.ReaderConfig",
    "State Machine.States.Gather.Branches[0].States.CollectNodesDistributed.ToleratedFailurePercentage "
    "is 100.0 but should be an Integer",
    # the same two on the job-log map (issue 22)
    'Field "InputType" not allowed in State Machine.States.Gather.Branches[2].States.'
    "ScanJobLogs.ItemReader.ReaderConfig",
    "State Machine.States.Gather.Branches[2].States.ScanJobLogs.ToleratedFailurePercentage "
    "is 100.0 but should be an Integer",
)


def substituted(definition: str) -> str:
    def value(match: re.Match[str]) -> str:
        key = match.group(1)
        if key.endswith("FunctionArn"):
            name = key.removesuffix("FunctionArn").lower()
            return f"arn:aws:lambda:us-west-2:123456789012:function:hpd-{name}"
        if key.endswith("BucketName"):
            return "hyperpod-perf-reports-123456789012-us-west-2"
        raise AssertionError(f"no plausible value for substitution ${{{key}}}")

    return re.sub(r"\$\{(\w+)\}", value, definition)


def statelint_problems(path: Path) -> list[str]:
    result = subprocess.run([str(STATELINT), str(path)], capture_output=True, text=True, check=False)
    if result.returncode == 0:
        return []
    return [line.strip() for line in result.stdout.splitlines()[1:] if line.strip()]


def test_the_state_machine_is_statelint_clean_apart_from_the_two_named_deviations(tmp_path: Path) -> None:
    # Given the definition with every substitution filled in
    definition = substituted(asl_path().read_text())
    assert "${" not in definition
    target = tmp_path / "diagnose.asl.json"
    target.write_text(definition)
    json.loads(definition)
    # When statelint checks it
    problems = statelint_problems(target)
    # Then only the two known deviations remain
    assert sorted(problems) == sorted(KNOWN)


def test_statelint_catches_a_broken_definition(tmp_path: Path) -> None:
    # Given a definition with a typo'd transition and an unknown state (guards the helper itself)
    broken = tmp_path / "broken.asl.json"
    broken.write_text(json.dumps({"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "Nowhere"}}}))
    # When / Then statelint reports it
    assert any("Nowhere" in p for p in statelint_problems(broken))
