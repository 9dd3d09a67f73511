"""The SSM documents are generated from collector.sh and constrain every parameter."""

from __future__ import annotations

import json
import re
import shlex
import subprocess

import pytest

from hyperpod_perf.collect import session_document as sd


def substitute(command: str, value: str) -> str:
    """What SSM does with {{ name }} before the agent runs the command."""
    return re.sub(r"\{\{\s*" + sd.TIMEOUT_PARAMETER + r"\s*\}\}", value, command)


def test_session_document_embeds_collector_sh_byte_for_byte() -> None:
    # Given the shipped collector.sh and the generated Session document
    shipped = sd.COLLECTOR_PATH.read_bytes()
    document = json.loads(sd.document_json())

    # When the agent splits the document's command into argv (shell-like quoting, no shell)
    command = substitute(document["properties"]["linux"]["commands"], "20")
    argv = shlex.split(command)

    # Then it runs `env HPD_TIMEOUT=20 bash -c <collector.sh> hpd-collector`, the script unchanged
    assert argv[:4] == ["env", "HPD_TIMEOUT=20", "bash", "-c"]
    assert argv[4].encode("utf-8") == shipped
    assert argv[5:] == ["hpd-collector"]


def test_session_document_shape_streams_stdout_stderr_and_exit_code() -> None:
    document = sd.build_session_document()
    assert document["schemaVersion"] == "1.0"
    assert document["sessionType"] == "NonInteractiveCommands"
    linux = document["properties"]["linux"]
    assert linux["separateOutputStream"] is True
    assert linux["runAsElevated"] is True
    assert len(sd.document_json().encode()) < sd.MAX_DOCUMENT_BYTES


@pytest.mark.parametrize("builder", [sd.build_session_document, sd.build_command_document])
def test_no_parameter_is_free_form(builder) -> None:  # type: ignore[no-untyped-def]
    # Given each generated document
    parameters = builder()["parameters"]

    # Then every parameter is pinned by a pattern anchored at both ends, and its default obeys it
    assert parameters, "the document should expose the section timeout"
    for name, spec in parameters.items():
        pattern = spec.get("allowedPattern")
        assert pattern and pattern.startswith("^") and pattern.endswith("$"), name
        assert re.fullmatch(pattern, spec["default"])
        # And injection attempts are rejected by the pattern
        for hostile in ("20; rm -rf /", "$(id)", "1 2", "", "1000", "20 x"):
            assert not re.fullmatch(pattern, hostile), (name, hostile)


def test_a_trailing_newline_that_a_lenient_dollar_lets_through_is_harmless() -> None:
    # Given "20\n": some regex engines let `$` match before a final newline
    assert re.search(sd.TIMEOUT_PATTERN, "20\n")
    command = sd.build_session_document()["properties"]["linux"]["commands"]

    # When the agent splits the substituted command into argv
    # Then it is the same argv as for "20": the newline is only whitespace, nothing else runs
    assert shlex.split(substitute(command, "20\n")) == shlex.split(substitute(command, "20"))


def test_command_document_runs_the_same_command() -> None:
    # Given the Command document (SendCommand path)
    document = sd.build_command_document()
    (step,) = document["mainSteps"]

    # Then it runs the identical command line under aws:runShellScript
    assert step["action"] == "aws:runShellScript"
    assert step["inputs"]["runCommand"] == [sd.collector_command()]
    argv = shlex.split(substitute(step["inputs"]["runCommand"][0], "5"))
    assert argv[4].encode("utf-8") == sd.COLLECTOR_PATH.read_bytes()


TRICKY = """#!/usr/bin/env bash
# a comment with 'quotes' and "doubles" and a \\backslash
printf '%s|' "it's" 'a\\b' "$0" "$HPD_TIMEOUT" "${HOME:+home}" '$(not run)'
echo
"""


def test_quoting_survives_argv_execution_without_a_shell() -> None:
    # Given a script full of quotes, backslashes, $ and comments
    command = substitute(sd.collector_command(TRICKY), "7")

    # When it is split into argv and executed directly (as the agent does, no shell)
    result = subprocess.run(shlex.split(command), capture_output=True, text=True, timeout=10, check=True)

    # Then the script ran verbatim: the values it printed prove quoting and $0 / env survived
    assert result.stdout == "it's|a\\b|hpd-collector|7|home|$(not run)|\n"


def test_quoting_survives_sh_for_the_run_command_path() -> None:
    # Given the same command as aws:runShellScript runs it (through sh)
    command = substitute(sd.collector_command(TRICKY), "9")

    # When sh runs it
    result = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=10, check=True)

    # Then the output is the same
    assert result.stdout == "it's|a\\b|hpd-collector|9|home|$(not run)|\n"


def test_a_literal_double_brace_in_the_script_is_refused() -> None:
    with pytest.raises(ValueError, match="parameter reference"):
        sd.collector_command("echo '{{ x }}'\n")


@pytest.mark.parametrize(
    "value", ["¹", "١٢", "٣", "²0", "0x1", " 20", "20\n", "+20", "2_0", "1000", "0", "00", "000", "007"]
)
def test_the_documents_allowed_pattern_refuses_non_ascii_or_out_of_range_timeouts(value: str) -> None:
    # Given timeouts str.isdigit() would accept ('¹', Arabic-Indic digits) or int() would read
    # Then the document's allowedPattern (which SSM enforces on any StartSession Parameters)
    # refuses them
    assert not re.fullmatch(sd.TIMEOUT_PATTERN, value)


@pytest.mark.parametrize("value", ["1", "9", "10", "20", "999"])
def test_the_documents_allowed_pattern_accepts_one_to_999_seconds(value: str) -> None:
    # Boundaries: 1 (the least that is a limit at all) and 999 (three digits); 0 means none to `timeout`
    assert re.fullmatch(sd.TIMEOUT_PATTERN, value)
