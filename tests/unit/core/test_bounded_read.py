"""The bounded reader at its boundary: exactly the limit, one byte under, one byte over."""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperpod_perf.domain.bounded_read import FileTooLarge, human_bytes, read_bounded, read_prefix

LIMIT = 1000


@pytest.mark.parametrize(
    ("size", "truncated"), [(LIMIT - 1, False), (LIMIT, False), (LIMIT + 1, True), (0, False)]
)
def test_read_prefix_at_the_boundary(tmp_path: Path, size: int, truncated: bool) -> None:
    path = tmp_path / "f"
    path.write_bytes(bytes(range(256)) * (size // 256) + bytes(size % 256))
    prefix = read_prefix(path, LIMIT)
    assert prefix.truncated is truncated
    assert prefix.data == path.read_bytes()[:LIMIT]


@pytest.mark.parametrize("size", [LIMIT - 1, LIMIT])
def test_read_bounded_returns_a_file_within_the_bound_whole(tmp_path: Path, size: int) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * size)
    assert read_bounded(path, LIMIT) == b"x" * size


def test_read_bounded_refuses_one_byte_over_naming_the_file_and_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * (LIMIT + 1))
    with pytest.raises(FileTooLarge, match=r"f: node file larger than 1000 bytes: not read"):
        read_bounded(path, LIMIT, "node file")


def test_a_directory_is_an_os_error_not_a_read() -> None:
    with pytest.raises(OSError):
        read_prefix(Path("/"), LIMIT)


def test_human_bytes() -> None:
    assert [human_bytes(n) for n in (4 << 20, 64 << 20, 1 << 10, 1000)] == [
        "4 MiB",
        "64 MiB",
        "1 KiB",
        "1000 bytes",
    ]
