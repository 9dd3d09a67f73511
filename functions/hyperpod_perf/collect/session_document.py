"""The SSM documents that run collector.sh on a node, generated from collector.sh itself.

Why generated: the script must exist once. The CDK stack deploys the document this module builds,
the CLI and Lambda name it in StartSession, and a test proves the script embedded in the
document is byte-for-byte ``collect/collector.sh`` — they cannot drift.

Why this shape: IAM can allow ``ssm:StartSession`` on this one document only, and the document
runs one fixed command. Its only parameter is constrained by ``allowedPattern`` to digits, so a
caller cannot smuggle a command in: with that IAM, nothing but the read-only collector can run.

The command line is split into argv by the agent (NonInteractiveCommands does not use a shell;
the agent splits with shell-like quoting), so the script is passed to ``bash -c`` as one
single-quoted word. ``separateOutputStream`` makes the agent stream stdout and stderr apart and end
with the ``EXIT_CODE: <n>`` message the data-channel client reads.

No boto3 here: the infra code imports this module too.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

COLLECTOR_PATH = Path(__file__).with_name("collector.sh")

#: Name the CDK stack gives the Session document unless configured otherwise.
DEFAULT_SESSION_DOCUMENT_NAME = "HyperPodPerf-Collect"

#: The single parameter: seconds each collector section may run (collector.sh's HPD_TIMEOUT).
TIMEOUT_PARAMETER = "sectionTimeoutSeconds"
#: 1-999: GNU `timeout 0` means no limit at all, so 0 (and 00, 000) is refused like 1000 is.
TIMEOUT_PATTERN = r"^[1-9][0-9]{0,2}$"
#: The same pattern for a local check. Why not ``str.isdigit()``: it accepts superscripts and other
#: scripts' digits (`'¹'`, `'١٢'`) that SSM's allowedPattern refuses; ``fullmatch`` also refuses the
#: trailing newline `$` would let through.
DEFAULT_SECTION_TIMEOUT = "20"

#: argv[0] the script sees ($0); shows up in `ps` on the node.
SCRIPT_NAME = "hpd-collector"

#: SSM's limit on document content.
MAX_DOCUMENT_BYTES = 64 * 1024


def collector_script(path: Path = COLLECTOR_PATH) -> str:
    """collector.sh exactly as shipped (bytes decoded as UTF-8, newlines untouched)."""
    return path.read_bytes().decode("utf-8")


def collector_command(script: str | None = None) -> str:
    """The one command line both documents run: ``env HPD_TIMEOUT=... bash -c '<script>' hpd-collector``."""
    body = collector_script() if script is None else script
    if "{{" in body:
        # SSM substitutes {{ name }} anywhere in the command: a literal one would corrupt the script.
        raise ValueError("collector script contains '{{', which SSM would treat as a parameter reference")
    return f"env HPD_TIMEOUT={{{{{TIMEOUT_PARAMETER}}}}} bash -c {shlex.quote(body)} {SCRIPT_NAME}"


def _parameters() -> dict[str, Any]:
    return {
        TIMEOUT_PARAMETER: {
            "type": "String",
            "description": "Seconds each collector section may run before `timeout` stops it (1-999).",
            "default": DEFAULT_SECTION_TIMEOUT,
            "allowedPattern": TIMEOUT_PATTERN,
        }
    }


def build_session_document(script: str | None = None) -> dict[str, Any]:
    """The Session document (type Session) for ``ssm:StartSession`` on HyperPod nodes."""
    return {
        "schemaVersion": "1.0",
        "description": "hyperpod-perf: run the read-only node collector and stream its raw output.",
        "sessionType": "NonInteractiveCommands",
        "parameters": _parameters(),
        "properties": {
            "linux": {
                "commands": collector_command(script),
                "runAsElevated": True,
                "separateOutputStream": True,
            }
        },
    }


def build_command_document(script: str | None = None) -> dict[str, Any]:
    """The equivalent Command document, for ``SendCommand`` on SSM managed instances."""
    return {
        "schemaVersion": "2.2",
        "description": "hyperpod-perf: run the read-only node collector.",
        "parameters": _parameters(),
        "mainSteps": [
            {
                "action": "aws:runShellScript",
                "name": "collect",
                "inputs": {"runCommand": [collector_command(script)], "timeoutSeconds": "900"},
            }
        ],
    }


def document_json(document: dict[str, Any] | None = None) -> str:
    """Stable JSON text (the CDK ``content`` / CreateDocument ``Content``)."""
    content = json.dumps(document if document is not None else build_session_document(), indent=2)
    if len(content.encode("utf-8")) > MAX_DOCUMENT_BYTES:
        raise ValueError(f"document is {len(content)} bytes, over SSM's {MAX_DOCUMENT_BYTES}-byte limit")
    return content
