"""Every finding the scanners accept is written down twice: where it is, and in docs/SECURITY.md.

bandit's are `# nosec <ids>` on the line (the reason on the comment line above it); checkov's
are `Metadata.checkov.skip` entries with a comment on the synthesized resource. This test keeps
the two records together: each accepted check id appears in SECURITY.md's table of accepted
findings with its reason, each checkov skip carries a specific reason, each nosec a reason line,
and no check is accepted wholesale (no `skips`/`skip-check` in a configuration).
"""

from __future__ import annotations

import re
import tomllib

from infra_synth import REPO_ROOT, Synth

SECURITY = REPO_ROOT / "docs" / "SECURITY.md"
NOSEC = re.compile(r"#\s*nosec\s+(B\d{3}(?:[ ,]+B\d{3})*)")


def _documented() -> set[str]:
    """Check ids in the SECURITY.md table of accepted scanner findings (`| CKV_AWS_117 |`, `| B311 |`)."""
    text = SECURITY.read_text()
    section = text.split("## Scanners", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `?((?:CKV_AWS_\d+)|(?:B\d{3}))`? \|", section, re.M))


def _nosecs() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for root in ("functions", "infra"):
        for path in sorted((REPO_ROOT / root).rglob("*.py")):
            lines = path.read_text(encoding="utf-8").splitlines()
            for number, line in enumerate(lines):
                match = NOSEC.search(line)
                if match is None:
                    continue
                where = f"{path.relative_to(REPO_ROOT)}:{number + 1}"
                above = lines[number - 1].strip() if number else ""
                assert above.startswith("# bandit ") and len(above) > 30, f"{where}: no reason line above"
                for check in re.findall(r"B\d{3}", match.group(1)):
                    found.setdefault(check, []).append(where)
    return found


def test_every_bandit_acceptance_has_its_reason_above_and_is_documented() -> None:
    accepted = _nosecs()
    assert accepted, "expected the documented acceptances (subprocess in collect/local.py, ...)"
    assert set(accepted) <= _documented(), sorted(set(accepted) - _documented())


def test_every_checkov_skip_has_a_reason_and_is_documented(synth: Synth) -> None:
    skips = [
        (logical_id, skip)
        for logical_id, resource in synth.resources.items()
        for skip in (resource.get("Metadata", {}).get("checkov", {}).get("skip", []))
    ]
    assert skips
    for logical_id, skip in skips:
        assert len(skip.get("comment", "")) > 40, (logical_id, skip)
    assert {s["id"] for _, s in skips} <= _documented(), sorted({s["id"] for _, s in skips} - _documented())
    # the pipeline's functions, synchronous, accept no DLQ; the asynchronous trigger has its own
    trigger = [lid for lid, r in synth.of_type("AWS::Lambda::Function").items() if "Trigger" in lid]
    for lid in trigger:
        ids = {s["id"] for s in synth.resources[lid]["Metadata"]["checkov"]["skip"]}
        assert "CKV_AWS_116" not in ids and synth.resources[lid]["Properties"].get("DeadLetterConfig")


def test_no_scanner_is_configured_to_skip_a_check_wholesale() -> None:
    bandit = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["bandit"]
    assert "skips" not in bandit and "tests" not in bandit
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert "--skip-check" not in makefile and "--soft-fail" not in makefile
    assert not (REPO_ROOT / ".checkov.yaml").exists() and not (REPO_ROOT / ".checkov.yml").exists()
