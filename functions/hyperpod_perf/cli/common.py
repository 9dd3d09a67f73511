"""Helpers shared by the CLI's sub-command modules."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pydantic import ValidationError

from hyperpod_perf.domain.bounded_read import FileTooLarge, read_bounded
from hyperpod_perf.rules.thresholds import Thresholds, ThresholdsError, load_thresholds

#: Every command's exit codes: 0 no concern, 1 at least one concern, 2 usage, unreadable input or
#: an AWS setup problem, 3 the run itself failed (`start --wait`: the execution FAILED, TIMED_OUT
#: or ABORTED, or left no verdict; `demo`: the offline pipeline did not finish), 130 interrupted.
EXIT_OK, EXIT_CONCERN, EXIT_USAGE, EXIT_FAILED = 0, 1, 2, 3


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


# --- where documents go: one meaning for each option, every command alike ----------------------
#
# `-o FILE` / `--output FILE`: the one document the command would print, written to FILE instead
# of stdout (`-o -` is stdout). `--out DIR`: a directory, always — the commands that write several
# documents (diagnose, nccl analyze, nccl plan, snapshot, demo) put them there under fixed names
# and say which on stderr. A `--out` that names a file (an existing one, or a name with a document
# suffix) is refused before any work, pointing to `-o`: `nccl analyze --out result.json` once made
# a directory called result.json. conventions.apply checks every sub-command against this.

#: Names that are documents, not directories: `--out report.json` meant `-o report.json`.
DOCUMENT_SUFFIXES = (".json", ".md", ".html", ".txt", ".svg")
OUTPUT_FILE_HELP = "write the document to FILE instead of stdout (- for stdout)"


def out_dir_arg(text: str) -> Path:
    """argparse `type=` for `--out`: a directory (made if missing); a file is refused (exit 2)."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(
            f"{text} is a file: --out names a directory the documents are written into; "
            f"for one document use -o {text}"
        )
    if path.suffix.lower() in DOCUMENT_SUFFIXES and not path.is_dir():
        raise argparse.ArgumentTypeError(
            f"{text} names a file ({path.suffix}): --out names a directory the documents are written "
            f"into; for one document use -o {text}"
        )
    return path


def output_file_arg(text: str) -> str:
    """argparse `type=` for `-o/--output`: a file, or `-` for stdout; a directory is refused."""
    if text != "-" and Path(text).is_dir():
        raise argparse.ArgumentTypeError(
            f"{text} is a directory: -o names the file one document is written to "
            "(--out DIR is for the commands that write several)"
        )
    return text


def add_output_file(parser: argparse.ArgumentParser) -> None:
    """`-o FILE` / `--output FILE`, the same on every command that prints a document."""
    parser.add_argument("-o", "--output", metavar="FILE", type=output_file_arg, help=OUTPUT_FILE_HELP)


def add_out_dir(parser: argparse.ArgumentParser, what: str, default: Path | None = None) -> None:
    """`--out DIR`, the same on every command that writes several documents; `what` says which."""
    parser.add_argument(
        "--out", metavar="DIR", type=out_dir_arg, default=default, help=f"write {what} into DIR"
    )


def emit(text: str, output: str | Path | None) -> None:
    """The command's document to `-o FILE`, else stdout."""
    if output and str(output) != "-":
        Path(output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


def announce_written(directory: Path, names: list[str]) -> None:
    """Which documents `--out DIR` received, on stderr (stdout stays the command's document)."""
    print(f"written to {directory}/: {', '.join(names)}", file=sys.stderr)


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
