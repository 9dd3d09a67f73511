"""The deployment's per-cluster configuration, one SSM parameter per cluster under one path.

Why SSM and not the environment: Lambda caps all of a function's variables at 4 KB together;
fifty clusters' alarm names and FSx ids need ~20 KB. The trigger reads the path once per cold
start (GetParametersByPath is authorized against the path itself, so IAM grants that path only).
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from hyperpod_perf.aws.errors import translate_client_error


def read_parameters_by_path(ssm: Any, path: str) -> dict[str, str]:
    """name -> value of every parameter directly under `path` (all pages, 10 per page)."""
    values: dict[str, str] = {}
    try:
        for page in ssm.get_paginator("get_parameters_by_path").paginate(Path=path, Recursive=False):
            for parameter in page.get("Parameters", []):
                values[parameter["Name"]] = parameter["Value"]
    except (ClientError, BotoCoreError) as error:
        raise translate_client_error(error, f"GetParametersByPath {path}") from error
    return values
