"""A first deployer's path (issue 23, friction 5): the configuration before the deploy, one way to
pass it that works, the example file valid as is, and a synth that refuses a silent stack.

What was wrong: DEPLOY.md's three commands deployed a stack with no cluster and no recipient (the
configuration section came after them); `-c hyperpod-perf="$(cat …)"` was said to work and later
said not to (the CDK CLI keeps only the first line of a `-c` value: a pretty-printed file arrives
as `{`); the example file passed as is failed (`hyperpod-perf.//: Extra inputs are not
permitted`); Node 18+ was a prerequisite and "no longer supported" in one page; teardown used an
unpinned CLI.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import aws_cdk as cdk
import pytest
from infra_synth import EXAMPLE_CONTEXT, REPO_ROOT

from infra.app import build_app
from infra.config import (
    ALLOW_EMPTY_KEY,
    CONFIG_FILE_KEY,
    CONFIG_OPTION,
    ConfigError,
    DeployConfig,
    allow_empty,
    app_config,
    load_config,
    load_config_file,
    require_cluster_and_recipient,
)

DEPLOY_MD = REPO_ROOT / "docs" / "DEPLOY.md"
CLUSTER = {"name": "ml-cluster-p5"}
EMAIL = "ml-oncall@example.com"


def _bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, flags=re.S)


def _refusal(config: DeployConfig) -> str:
    with pytest.raises(ConfigError) as error:
        require_cluster_and_recipient(config, allowed_empty=False)
    return str(error.value)


# --- the example file and the one way to pass it ------------------------------------------------


def test_the_example_file_is_a_valid_configuration_as_is() -> None:
    # Given infra/example-context.json, named as DEPLOY.md names the deployer's copy of it
    config = app_config(str(EXAMPLE_CONTEXT), None)
    # Then it is read whole through the model the synth uses, and is deployable as it is
    assert [c.name for c in config.clusters] == ["ml-cluster-p5"]
    assert config.notification_emails == (EMAIL,)
    assert config.slack is not None and config.slack.workspace_id == "T0123ABCDEF"
    require_cluster_and_recipient(config, allowed_empty=False)
    # And it holds the configuration object only (no wrapper key, no `//` comment key)
    assert set(json.loads(EXAMPLE_CONTEXT.read_text())) <= set(DeployConfig.model_fields) | {
        f.alias for f in DeployConfig.model_fields.values() if f.alias
    }


def test_the_file_is_read_relative_to_where_npx_cdk_runs_and_its_errors_say_which_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the deployer's file in the directory the CDK CLI runs the app from
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hyperpod-perf.json").write_text(
        json.dumps({"clusters": [CLUSTER], "notificationEmails": [EMAIL]}, indent=2)
    )
    # Then the relative name from the command line finds it (pretty-printed JSON is fine)
    assert [c.name for c in app_config("hyperpod-perf.json", None).clusters] == ["ml-cluster-p5"]
    # And a missing file, a non-JSON file and a bad value each say which file and what
    with pytest.raises(ConfigError, match=r"cannot read the configuration file nope\.json: No such file"):
        app_config("nope.json", None)
    (tmp_path / "bad.json").write_text("{clusters: []}")
    with pytest.raises(ConfigError, match=r"configuration file bad\.json is not JSON"):
        load_config_file("bad.json")
    (tmp_path / "typo.json").write_text('{"clusterz": []}')
    with pytest.raises(ConfigError, match=r"(?s)typo\.json: invalid configuration 'hyperpod-perf'.*clusterz"):
        load_config_file("typo.json")
    # And naming a file and giving an object too is ambiguous, refused
    with pytest.raises(ConfigError, match="not both"):
        app_config("hyperpod-perf.json", {"clusters": []})


def test_a_file_passed_inline_as_the_cli_truncates_it_says_what_to_do_instead() -> None:
    # Given what `-c hyperpod-perf="$(cat pretty.json)"` hands the app: the first line only
    with pytest.raises(ConfigError) as error:
        load_config("{")
    # Then the message says why and names the option that works
    assert "only the first line of a multi-line -c value" in str(error.value)
    assert CONFIG_OPTION in str(error.value)
    # While one line of JSON text (the tests' and older scripts' form) is still read
    assert load_config('{"nodeSampleSize": 3}').node_sample_size == 3


def test_cdk_json_carries_no_configuration() -> None:
    # One place for the configuration: the deployer's file, named on the command line
    cdk_json = json.loads((REPO_ROOT / "cdk.json").read_text())
    assert not any(key.startswith("hyperpod-perf") for key in cdk_json.get("context", {}))


# --- the refusal -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "missing"),
    [
        ({}, ["no cluster", "no recipient"]),
        ({"clusters": [CLUSTER]}, ["no recipient"]),
        ({"notificationEmails": [EMAIL]}, ["no cluster"]),
        ({"slack": {"workspaceId": "T1", "channelId": "C1"}}, ["no cluster"]),
    ],
)
def test_a_stack_with_no_cluster_or_no_recipient_is_refused_with_the_way_out(raw, missing) -> None:
    message = _refusal(load_config(raw))
    # Then the message names what is missing, and only that
    assert [m for m in ("no cluster", "no recipient") if m in message] == missing
    # and both ways out: the configuration file, or the flag for an empty stack on purpose
    assert CONFIG_OPTION in message
    assert f"-c {ALLOW_EMPTY_KEY}=true" in message
    # And on purpose it is accepted
    require_cluster_and_recipient(load_config(raw), allowed_empty=True)


@pytest.mark.parametrize(
    "recipient", [{"notificationEmails": [EMAIL]}, {"slack": {"workspaceId": "T1", "channelId": "C1"}}]
)
def test_a_cluster_and_either_recipient_is_enough(recipient) -> None:
    require_cluster_and_recipient(load_config({"clusters": [CLUSTER], **recipient}), allowed_empty=False)


def test_the_flag_is_true_or_false_and_nothing_else() -> None:
    # `-c` values arrive as text, cdk.json's as JSON booleans; absent is false
    assert [allow_empty(v) for v in ("true", True, "false", False, None)] == [True, True, False, False, False]
    for typo in ("yes", "True", "1", 1):
        with pytest.raises(ConfigError, match=f"'{ALLOW_EMPTY_KEY}' must be true or false"):
            allow_empty(typo)


def test_the_app_refuses_before_building_anything_and_builds_with_the_flag() -> None:
    # Given the app with no configuration at all
    with pytest.raises(ConfigError, match="refusing to synthesize a hyperpod-perf stack with no cluster"):
        build_app(cdk.App(context={"aws:cdk:bundling-stacks": []}))
    # When the empty stack is asked for on purpose, as the CLI passes `-c hyperpod-perf:allowEmpty=true`
    _, stack = build_app(cdk.App(context={ALLOW_EMPTY_KEY: "true", "aws:cdk:bundling-stacks": []}))
    # Then it is built: the stack that runs on demand only
    assert stack.stack_name == "HyperPodPerf"


def test_on_the_command_line_the_refusal_is_the_message_deploy_md_shows_and_no_traceback(
    tmp_path: Path,
) -> None:
    # Given the app as the CDK CLI runs it (context in CDK_CONTEXT_JSON), with no configuration
    env = {**os.environ, "CDK_CONTEXT_JSON": json.dumps({}), "CDK_OUTDIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, str(REPO_ROOT / "infra" / "app.py")],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    # Then it exits non-zero with the refusal, not a traceback
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    message = _refusal(load_config({}))
    assert result.stderr.strip().endswith(message)
    # And DEPLOY.md quotes that message exactly, as `npx cdk deploy` prints it
    assert f"$ npx cdk deploy\n{message}\n" in DEPLOY_MD.read_text()
    # And a file named on the command line that is not there is one line too
    env["CDK_CONTEXT_JSON"] = json.dumps({CONFIG_FILE_KEY: "hyperpod-perf-missing.json"})
    missing = subprocess.run(
        [sys.executable, str(REPO_ROOT / "infra" / "app.py")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert (missing.returncode, missing.stderr.strip()) == (
        1,
        "cannot read the configuration file hyperpod-perf-missing.json: No such file or directory",
    )


# --- DEPLOY.md: the path, as written, is the one the build runs --------------------------------------


def test_every_cdk_command_in_deploy_md_is_the_pinned_cli_with_the_one_option() -> None:
    text = DEPLOY_MD.read_text()
    commands = [line for block in _bash_blocks(text) for line in block.splitlines() if "cdk " in line]
    # Then bootstrap, deploy and destroy are all there, each `npx cdk` with the configuration file
    verbs = [line.split()[2] for line in commands]
    assert verbs == ["bootstrap", "deploy", "destroy"]
    assert all(
        line.startswith(f"npx cdk {verb} {CONFIG_OPTION}") for line, verb in zip(commands, verbs, strict=True)
    )
    # And no unpinned CLI and no inline JSON anywhere in the page or the README
    for page in (text, (REPO_ROOT / "README.md").read_text()):
        assert "aws-cdk@" not in page
        assert not [b for b in _bash_blocks(page) if "-c hyperpod-perf=" in b]
    # And the configuration is written (step 2) before the first deploy command (step 3)
    assert (
        text.index("## 2. Write your configuration")
        < text.index("npx cdk deploy")
        < text.index("## 4. Confirm the e-mail subscription")
    )


def test_the_build_passes_the_configuration_the_way_deploy_md_documents() -> None:
    makefile = (REPO_ROOT / "Makefile").read_text()
    # make cdk-synth (whose assembly make deploy-local deploys) names the example file with the option
    assert "-c hyperpod-perf:config=infra/example-context.json" in makefile
    # and the empty stack only with the documented flag
    assert f"-c {ALLOW_EMPTY_KEY}=true" in makefile
    assert "-c hyperpod-perf=" not in makefile
    # deploy-local, when it synthesizes itself, does the same
    assert 'f"hyperpod-perf:config={args.context}"' in (REPO_ROOT / "infra" / "deploy_local.py").read_text()


def test_the_prerequisites_are_the_versions_the_project_pins() -> None:
    text = DEPLOY_MD.read_text()
    package = json.loads((REPO_ROOT / "package.json").read_text())
    lock = json.loads((REPO_ROOT / "package-lock.json").read_text())
    pinned = package["devDependencies"]["aws-cdk"]
    # The CDK CLI: package.json's exact pin, which the lock file installs
    assert re.fullmatch(r"\d+\.\d+\.\d+", pinned)
    assert lock["packages"]["node_modules/aws-cdk"]["version"] == pinned
    assert f"`aws-cdk` {pinned}" in text
    # Python: pyproject's floor
    python = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert python == ">=3.11" and "Python | 3.11 or later" in text
    # The AWS CLI release the local deploy runs DEPLOY.md's commands with: the Makefile's pin
    (awscli,) = re.findall(r"'(awscli==[0-9.]+)'", (REPO_ROOT / "Makefile").read_text())
    assert f"`{awscli}`" in text
    # Node: one statement, no "18+" beside "18.x is no longer supported"
    assert "Node.js 18+" not in text and "18.x ended 2025-11-30" in text
