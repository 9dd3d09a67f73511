"""The snapshot container: sections split back out, damage recorded instead of raised."""

from hyperpod_perf.collect.snapshot import RawSnapshot, parse_container, render_container


def test_round_trip_keeps_text_and_rc():
    # Given three sections rendered by the container writer
    text = render_container(
        [
            ("meta", "hostname=ip-10-1-2-3\ninstance_id=i-0a1b2c3d4e5f60001", 0),
            ("gpu-query", "index, name\n0, H100\n", 0),
            ("lfs-df", "", 124),
        ]
    )
    # When it is parsed back
    snap = parse_container(text, "x.txt")
    # Then every section, its text and rc come back, with no problem recorded
    assert list(snap.sections) == ["meta", "gpu-query", "lfs-df"]
    assert snap.sections["gpu-query"].text == "index, name\n0, H100\n"
    assert snap.sections["lfs-df"].rc == 124 and snap.sections["lfs-df"].text == ""
    assert snap.problems == []
    assert snap.meta["hostname"] == "ip-10-1-2-3"
    assert snap.node_name() == "i-0a1b2c3d4e5f60001"


def test_cut_stream_keeps_what_arrived_and_says_so():
    text = render_container([("meta", "hostname=h1", 0)]) + "=== hpd:begin gpu-query ===\nindex\n0\n"
    snap = parse_container(text, "h1.txt")
    assert snap.sections["gpu-query"].rc is None
    assert snap.sections["gpu-query"].text == "index\n0\n"
    assert any("cut off" in p for p in snap.problems)


def test_garbage_and_duplicates_are_reported_not_raised():
    text = "junk line\n" + render_container([("meta", "a=1", 0), ("meta", "a=2", 0)])
    snap = parse_container(text, "n.txt")
    assert snap.meta == {"a": "1"}
    assert any("more than once" in p for p in snap.problems)
    assert any("outside any section" in p for p in snap.problems)


def test_empty_and_foreign_input():
    assert parse_container("", "e.txt").problems == ["empty snapshot: the collector printed nothing"]
    foreign = parse_container("hello\nworld\n", "f.txt")
    assert foreign.sections == {}
    assert "no hpd sections found: not collector output" in foreign.problems


def test_node_name_prefers_instance_id_then_file_name_then_hostname():
    assert RawSnapshot(source="dir/i-0123456789abcdef0.txt").node_name() == "i-0123456789abcdef0"
    snap = parse_container(render_container([("meta", "hostname=gpu-7", 0)]), "dir/snapshot-7.txt")
    assert snap.node_name() == "gpu-7"
    assert RawSnapshot(source="dir/node12.txt").node_name() == "node12"
