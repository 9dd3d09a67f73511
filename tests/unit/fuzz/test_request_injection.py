"""Injection: identifiers that reach an API call, an S3 key or the Session document are held to
strict patterns at the edge, and nothing in the package hands a string to a shell.

What is proven:
- `DiagnoseRequest` rejects cluster names, node ids, FSx ids, S3 prefixes and regions carrying
  `;`, `$()`, backticks, `../`, newlines, NUL, unicode lookalikes or 10 KB, with a
  ValidationError naming the field; whatever it accepts matches the ASCII pattern in full;
- `safe_segment` never yields `/`, a `.`/`..` segment or a control character, and every
  `RunLayout` key stays under `reports/<cluster>/`;
- statically: no module uses `shell=True`, `os.system`, `os.popen`, `os.exec*`/`os.spawn*`; only
  `collect/local.py` imports subprocess, with a fixed argv list; no caller passes StartSession
  (or SendCommand) any `Parameters`: the runners are built without them, and the adapters only
  pass on what a caller gave.
"""

from __future__ import annotations

import ast
import posixpath
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

import hyperpod_perf
from hyperpod_perf.collect.session_document import (
    TIMEOUT_PARAMETER,
    TIMEOUT_PATTERN,
    build_session_document,
)
from hyperpod_perf.domain.layout import RunLayout, cluster_prefix, safe_segment
from hyperpod_perf.domain.request import (
    CLUSTER_ARN_PATTERN,
    CLUSTER_NAME_PATTERN,
    FSX_ID_PATTERN,
    INSTANCE_ID_PATTERN,
    LOG_GROUP_PATTERN,
    REGION_PATTERN,
    S3_PREFIX_PATTERN,
    DiagnoseRequest,
)

FUZZ = settings(settings.get_profile("hpd-fuzz"))
PACKAGE = Path(hyperpod_perf.__file__).parent

#: What an attacker (or a careless copy-paste) puts into an identifier.
PAYLOADS: dict[str, str] = {
    "semicolon": ";reboot",
    "command substitution": "$(reboot)",
    "backticks": "`reboot`",
    "parent directory": "/../../etc",
    "dot-dot segment": "../",
    "embedded newline": "\nreboot",
    "NUL": "\x00",
    "carriage return": "\rx",
    "pipe and redirect": "|cat>/tmp/x",
    "space": " x",
    "cyrillic a lookalike": "\u0430",
    "fullwidth digit": "\uff10",
    "kelvin sign": "\u212a",
    "zero-width space": "\u200b",
    "right-to-left override": "\u202e",
    "10 KB": "a" * 10240,
}

VALID = {
    "cluster": "ml-cluster-1",
    "nodes": "i-0123456789abcdef0",
    "fsx_ids": "fs-0123456789abcdef0",
    "nccl_s3_prefix": "s3://my-bucket/nccl/run-1/",
    "job_logs_s3_prefix": "s3://my-bucket/jobs/run-1/",
    "job_logs_group": "/aws/containerinsights/my-eks/application",
    "region": "us-west-2",
}


def request_with(field: str, value: str) -> DiagnoseRequest:
    data: dict[str, object] = {"cluster": VALID["cluster"]}
    data[field] = (value,) if field in ("nodes", "fsx_ids") else value
    return DiagnoseRequest.model_validate(data)


@pytest.mark.parametrize("payload", list(PAYLOADS))
@pytest.mark.parametrize("field", list(VALID))
def test_an_identifier_carrying_an_injection_is_rejected_naming_the_field(field, payload, outcome):
    # Given a valid identifier with the payload inside it (not only at its edges, where
    # whitespace is stripped)
    valid = VALID[field]
    middle = len(valid) // 2 + 1
    value = valid[:middle] + PAYLOADS[payload] + valid[middle:]

    # When validated, then a ValidationError names the field
    with pytest.raises(ValidationError) as raised:
        request_with(field, value)
    assert raised.value.errors()[0]["loc"][0] == field
    outcome(f"`{field}` carrying {payload}", f"ValidationError on `{field}`")


@pytest.mark.parametrize("field", list(VALID))
def test_surrounding_whitespace_is_stripped_before_the_pattern_so_the_value_is_clean(field, outcome):
    # Given a valid identifier with a trailing newline and tabs (a pasted value)
    request = request_with(field, f"\t{VALID[field]}\n")

    # Then the stored value is the bare identifier: the newline never travels further
    stored = getattr(request, field)
    assert (stored[0] if isinstance(stored, tuple) else stored) == VALID[field]
    outcome(f"`{field}` with surrounding whitespace/newline", "stripped; the clean value is used")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("region", "us-west-\u0663"),  # Arabic-Indic three where the digit goes
        ("region", "us-west-\uff12"),  # fullwidth two
        ("cluster", "arn:aws:sagemaker:us-west-2:\u0661\u0662\u0663456789012:cluster/qx06scn2c9eu"),
        ("nodes", "i-0123456789abcdef\u0660"),
        ("fsx_ids", "fs-0123456789abcdef\u0660"),
    ],
    ids=[
        "region-arabic-digit",
        "region-fullwidth-digit",
        "arn-arabic-digits",
        "node-arabic-digit",
        "fsx-arabic-digit",
    ],
)
def test_unicode_digits_where_a_digit_belongs_are_rejected(field, value, outcome):
    # Given a lookalike digit exactly where the pattern expects a digit (`\d` matches it in both
    # Python's and pydantic's regex engines, so the patterns spell out [0-9])
    with pytest.raises(ValidationError) as raised:
        request_with(field, value)
    assert raised.value.errors()[0]["loc"][0] == field
    outcome(f"`{field}` with a non-ASCII digit in a digit position", f"ValidationError on `{field}`")


def test_unknown_keys_are_rejected(outcome):
    with pytest.raises(ValidationError) as raised:
        DiagnoseRequest.model_validate({"cluster": "c", "command": "rm -rf /"})
    assert raised.value.errors()[0]["loc"] == ("command",)
    outcome("request with an unknown key `command`", "ValidationError (extra keys forbidden)")


def fullmatch(pattern: str, value: str) -> bool:
    """The pattern anchored at the true end (`$` also matches before a final newline)."""
    return re.fullmatch(pattern.removeprefix("^").removesuffix("$"), value) is not None


#: field -> the patterns an accepted value must match in full (ASCII only, no whitespace).
ACCEPTED_SHAPES = {
    "cluster": (CLUSTER_NAME_PATTERN, CLUSTER_ARN_PATTERN),
    "nodes": (INSTANCE_ID_PATTERN,),
    "fsx_ids": (FSX_ID_PATTERN,),
    "nccl_s3_prefix": (S3_PREFIX_PATTERN,),
    "job_logs_s3_prefix": (S3_PREFIX_PATTERN,),
    "job_logs_group": (LOG_GROUP_PATTERN,),
    "region": (REGION_PATTERN,),
}


def near_valid(field: str) -> st.SearchStrategy[str]:
    """Mostly valid identifiers with arbitrary text spliced in, plus arbitrary text."""
    base = VALID[field]
    return st.one_of(
        st.text(max_size=300),
        st.builds(
            lambda cut, noise: base[:cut] + noise + base[cut:],
            st.integers(0, len(base)),
            st.text(min_size=1, max_size=20),
        ),
    )


@pytest.mark.parametrize("field", list(ACCEPTED_SHAPES))
@FUZZ
@given(data=st.data())
def test_whatever_is_accepted_matches_the_strict_ascii_pattern_in_full(field, data):
    # Given any text in the field
    value = data.draw(near_valid(field))

    # When validated: either a ValidationError naming the field, or a value that matches its
    # pattern from first to last character (so no `;`, `$`, `/..`, newline or lookalike passes)
    try:
        request = request_with(field, value)
    except ValidationError as error:
        assert error.errors()[0]["loc"][0] == field
        return
    stored = getattr(request, field)
    for item in stored if isinstance(stored, tuple) else (stored,):
        assert item.isascii() and item.isprintable()
        assert any(fullmatch(p, item) for p in ACCEPTED_SHAPES[field]), item
        assert "/../" not in item + "/" and "/./" not in item + "/"


@FUZZ
@given(reason=st.text(max_size=300))
def test_the_free_text_reason_is_one_printable_line_or_rejected(reason):
    # Given any reason text (it ends up in e-mail subjects and reports)
    try:
        request = DiagnoseRequest(cluster="c", reason=reason)
    except ValidationError as error:
        assert error.errors()[0]["loc"] == ("reason",) and len(reason.strip()) > 256
        return
    # Then it is a single printable line of at most 256 characters
    assert request.reason.isprintable() and "\n" not in request.reason and 0 < len(request.reason) <= 256


# --- S3 keys -----------------------------------------------------------------------------------

SEGMENT = re.compile(r"[A-Za-z0-9._-]+")


@FUZZ
@given(value=st.text(max_size=400), limit=st.integers(1, 200))
def test_safe_segment_cannot_climb_out_of_its_prefix(value, limit):
    segment = safe_segment(value, limit)
    assert SEGMENT.fullmatch(segment), segment
    assert segment not in (".", "..") and not segment.startswith(".")
    assert 1 <= len(segment) <= limit


@pytest.mark.parametrize("payload", list(PAYLOADS))
def test_layout_keys_stay_under_the_clusters_prefix(payload, outcome):
    # Given a cluster, execution, node and work name all carrying the payload
    hostile = f"x{PAYLOADS[payload]}y"
    layout = RunLayout.new(hostile, hostile, datetime(2025, 5, 9, 21, 46, tzinfo=UTC))
    keys = [
        layout.report("html"),
        layout.raw(hostile),
        layout.work(hostile),
        layout.node_result(hostile),
        layout.node_results_prefix,
    ]

    # Then every key is under reports/<safe cluster>/, with no traversal or control character
    prefix = cluster_prefix(hostile)
    assert prefix == f"reports/{safe_segment(hostile, 63)}/"
    for key in keys:
        assert key.startswith(prefix) and key.startswith(layout.prefix)
        assert posixpath.normpath(key) == key.rstrip("/")
        assert ".." not in key.split("/") and "//" not in key
        assert key.isascii() and key.isprintable()
    outcome(f"cluster/node/execution names carrying {payload}", "S3 keys stay under reports/<cluster>/")


@FUZZ
@given(cluster=st.text(max_size=100), node=st.text(max_size=100), execution=st.text(max_size=100))
def test_any_names_give_keys_under_the_clusters_prefix(cluster, node, execution):
    layout = RunLayout.new(cluster, execution, datetime(2025, 1, 1, tzinfo=UTC))
    for key in (layout.raw(node), layout.node_result(node), layout.work(node), layout.report("json")):
        assert key.startswith(cluster_prefix(cluster))
        assert posixpath.normpath(key) == key
        assert all(SEGMENT.fullmatch(part) for part in key.split("/"))


# --- nothing reaches a shell -------------------------------------------------------------------

#: The one module allowed to start a process: it runs the packaged collector.sh with a fixed argv.
SUBPROCESS_ALLOWED = {"collect/local.py"}
SHELL_CALLS = {
    ("os", "system"),
    ("os", "popen"),
    ("os", "execl"),
    ("os", "execle"),
    ("os", "execlp"),
    ("os", "execv"),
    ("os", "execve"),
    ("os", "execvp"),
    ("os", "execvpe"),
    ("os", "spawnl"),
    ("os", "spawnv"),
    ("os", "posix_spawn"),
    ("os", "posix_spawnp"),
    ("pty", "spawn"),
    ("asyncio", "create_subprocess_shell"),
    ("asyncio", "create_subprocess_exec"),
}


def package_modules() -> list[tuple[str, ast.Module]]:
    return [
        (path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(encoding="utf-8"), str(path)))
        for path in sorted(PACKAGE.rglob("*.py"))
    ]


def dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{dotted(node.value)}.{node.attr}"
    return "?"


def test_no_module_hands_a_string_to_a_shell(outcome):
    # Given every module of the package, read as syntax trees
    offenders: list[str] = []
    for name, tree in package_modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                modules = (
                    [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                )
                if any(m.split(".")[0] in ("subprocess", "pty", "commands") for m in modules) and (
                    name not in SUBPROCESS_ALLOWED
                ):
                    offenders.append(f"{name}:{node.lineno} imports {modules}")
            if not isinstance(node, ast.Call):
                continue
            called = dotted(node.func)
            if tuple(called.rsplit(".", 1)) in SHELL_CALLS:
                offenders.append(f"{name}:{node.lineno} calls {called}")
            for keyword in node.keywords:
                if keyword.arg == "shell" and not (
                    isinstance(keyword.value, ast.Constant) and keyword.value.value is False
                ):
                    offenders.append(f"{name}:{node.lineno} passes shell={ast.unparse(keyword.value)}")
            if called.startswith("subprocess.") and node.args and not isinstance(node.args[0], ast.List):
                offenders.append(f"{name}:{node.lineno} {called} with a non-list argv")

    # Then there is none, and the one process the package starts has a fixed argv
    assert offenders == []
    local = dict(package_modules())["collect/local.py"]
    argvs = [
        ast.unparse(n.args[0])
        for n in ast.walk(local)
        if isinstance(n, ast.Call) and dotted(n.func).startswith("subprocess.") and n.args
    ]
    assert argvs == ["['bash', str(script)]"]
    outcome("any module using shell=True / os.system / os.popen / exec", "none (AST scan of the package)")


#: The classes whose `parameters` reach StartSession / SendCommand.
RUNNERS = frozenset({"SessionNodeRunner", "SendCommandNodeRunner"})
#: The plumbing forms in which StartSession/SendCommand `Parameters` may be passed along.
PARAMETER_PLUMBING = re.compile(
    r"^(None|parameters|self\.parameters|self\.parameters or None|dict\(parameters or \{\}\)"
    r"|\{k: list\(v\) for k, v in parameters\.items\(\)\})$"
)


def test_start_session_is_called_with_no_parameters(outcome):
    # Given every place the package passes a `parameters`/`Parameters` value on
    offenders: list[str] = []
    for name, tree in package_modules():
        for node in ast.walk(tree):
            values: list[ast.expr] = []
            if isinstance(node, ast.Call):
                values += [k.value for k in node.keywords if k.arg in ("parameters", "Parameters")]
            if isinstance(node, ast.Dict):
                values += [
                    v
                    for k, v in zip(node.keys, node.values, strict=True)
                    if isinstance(k, ast.Constant) and k.value == "Parameters"
                ]
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Subscript) and ast.unparse(target.slice) == "'Parameters'":
                        values.append(node.value)
                    if ast.unparse(target) == "self.parameters":
                        values.append(node.value)
            offenders += [
                f"{name}:{v.lineno} {ast.unparse(v)}"
                for v in values
                if not PARAMETER_PLUMBING.match(ast.unparse(v))
            ]

    # And every node runner the package builds (the only callers of StartSession/SendCommand)
    runners = [
        (name, node)
        for name, tree in package_modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and dotted(node.func).split(".")[-1] in RUNNERS
    ]

    # Then each `Parameters` is plumbing of a caller's value, and no runner is given any
    assert offenders == []
    assert len(runners) >= 2  # the CLI's and the CollectNode handler's
    given = [
        f"{name}:{node.lineno}" for name, node in runners if any(k.arg == "parameters" for k in node.keywords)
    ]
    assert given == []
    outcome(
        "request-derived strings in the Session document's parameters",
        "none: StartSession is never given Parameters (AST scan)",
    )


def test_the_session_document_has_one_digits_only_parameter_and_no_other_substitution():
    document = build_session_document()
    assert document["parameters"] == {TIMEOUT_PARAMETER: document["parameters"][TIMEOUT_PARAMETER]}
    assert document["parameters"][TIMEOUT_PARAMETER]["allowedPattern"] == TIMEOUT_PATTERN
    assert re.findall(r"\{\{\s*(\w+)\s*\}\}", document["properties"]["linux"]["commands"]) == [
        TIMEOUT_PARAMETER
    ]
