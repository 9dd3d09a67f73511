"""Helpers shared by the CLI's sub-command modules."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pydantic import ValidationError

from hyperpod_perf.domain.bounded_read import FileTooLarge, read_bounded
from hyperpod_perf.rules.thresholds import Thresholds, ThresholdsError, load_thresholds

EXIT_OK, EXIT_CONCERN, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad arguments or unreadable input: reported as one line, exit 2."""


def instance_type_arg(text: str) -> str:
    """argparse `type=` for `--instance-type`: a typo is refused with a suggestion, exit 2; the
    name is passed on lower-cased, as the rule tables spell it (an upper-case name would be
    accepted here and then read as an unknown type by the case-sensitive EFA table)."""
    from hyperpod_perf.rules.instance_types import instance_type_problem, normalised_instance_type

    problem = instance_type_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return normalised_instance_type(text)


def load_thresholds_or_exit(path: str | None) -> Thresholds:
    try:
        return load_thresholds(path)
    except ThresholdsError as exc:
        raise UsageError(str(exc)) from exc


#: A file argument read whole (a node list, thresholds): a hostile or mistaken one (`/dev/zero`,
#: a FIFO that never ends, a multi-GB log) stops at this bound with one line, exit 2.
FILE_ARGUMENT_MAX_BYTES = 4 * 1024 * 1024


def read_text_or_exit(path: str | Path, limit: int = FILE_ARGUMENT_MAX_BYTES, what: str = "file") -> str:
    try:
        return read_bounded(path, limit, what).decode("utf-8", errors="replace")
    except FileTooLarge as exc:
        raise UsageError(str(exc)) from exc
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from exc


def emit(text: str, out: str | Path | None) -> None:
    if out:
        Path(out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


def first_line(exc: Exception) -> str:
    """One line for the operator: a validation error's first field and message, else the first line.

    A pattern mismatch names the value and, where we know one, an example of the expected form:
    the operator should not have to read our internal regular expression.
    """
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        if err.get("type") == "string_pattern_mismatch":
            example = _EXPECTED_FORMS.get(str(err["loc"][-1]) if err["loc"] else "", "")
            return f"{field}: {err.get('input')!r} is not valid{example}"
        return f"{field}: {err['msg']}"
    return str(exc).splitlines()[0]


#: What a valid value looks like, for the fields whose validation is a regular expression.
_EXPECTED_FORMS = {
    "region": " (an AWS region name such as us-west-2)",
    "cluster": " (a HyperPod cluster name or ARN)",
    "nodes": " (instance ids such as i-0123456789abcdef0)",
    "nccl_s3_prefix": " (an s3://bucket/prefix URI)",
}


def add_aws_options(parser: argparse.ArgumentParser) -> None:
    """--region and --profile, as the AWS CLI names and resolves them."""
    parser.add_argument(
        "--region",
        help="AWS region (default: AWS_REGION, then AWS_DEFAULT_REGION, then the profile's region)",
    )
    parser.add_argument(
        "--profile",
        help="named profile from ~/.aws/config (default: AWS_PROFILE, then the default credentials)",
    )
