"""EFA parsers on real outputs: fi_info (five shapes), hw_counters listings, port states."""

from pathlib import Path

import pytest

from hyperpod_perf.parse.efa import (
    UNNAMED_DEVICE,
    parse_efa_counters,
    parse_efa_ports,
    parse_fi_info,
)

REAL = Path(__file__).parents[2] / "fixtures" / "real"


def read(name: str) -> str:
    return (REAL / name).read_text(encoding="utf-8")


# --- fi_info -------------------------------------------------------------------------------------


def test_fi_info_p4d_lists_four_devices_with_their_fabrics():
    # Given `fi_info -p efa` from a p4d.24xlarge (4 EFA devices, libfabric 111.20)
    info = parse_fi_info(read("fi-info/p4d_4dev_efa-rdm_libfabric-111.20.txt"))
    # Then four RDM endpoints of the efa provider are read, one per device
    assert info.ok and info.error is None
    assert info.devices == ("rdmap16s27", "rdmap32s27", "rdmap144s27", "rdmap160s27")
    assert info.versions == ("111.20",)
    assert info.endpoint_types == ("FI_EP_RDM",)
    assert info.providers[0].fabric == "EFA-fe80::10d8:baff:fec9:6c1"
    assert info.providers[0].protocol == "FI_PROTO_EFA"
    assert all(p.rank is None for p in info.providers)


def test_fi_info_failure_line_is_an_error_not_garbage():
    # Given the one-line failure fi_info prints when no EFA provider is usable
    info = parse_fi_info(read("fi-info/fail_fi_getinfo-61.txt"))
    # Then it is read as an error with its libfabric code, and no provider
    assert info.error == "fi_getinfo: -61"
    assert info.error_code == -61
    assert info.providers == ()
    assert not info.ok


def test_fi_info_through_mpirun_strips_rank_prefixes_and_ssh_warnings():
    # Given fi_info run on two g5.8xlarge pods through mpirun --tag-output, after ssh warnings
    info = parse_fi_info(read("fi-info/g5-8xl_eks-mpijob_mpirun-prefix_116.10.txt"))
    # Then each rank's block is one provider entry with its rank, and the warnings are ignored
    assert [p.rank for p in info.providers] == [1, 0]
    assert {p.domain for p in info.providers} == {"rdmap197s0-rdm"}
    assert info.devices == ("rdmap197s0",)
    assert info.versions == ("116.10",)
    assert info.fabrics == ("efa",)
    assert info.ok


def test_fi_info_old_fabric_naming_and_layered_rxd_provider():
    # Given 2020-era output: fabric `EFA-<ipv6>`, domain `efa_0-rdm/-dgrm`, plus `efa;ofi_rxd`
    info = parse_fi_info(read("fi-info/efa_2020_old-fabric-name_libfabric-issue5689.txt"))
    # Then all three entries count as EFA, the device is efa_0, and the old naming is recognised
    assert [p.provider for p in info.providers] == ["efa", "efa", "efa;ofi_rxd"]
    assert len(info.efa_providers) == 3
    assert info.devices == ("efa_0",)
    assert info.domains == ("efa_0-rdm", "efa_0-dgrm")
    assert info.versions == ("2.0", "1.0")
    assert info.endpoint_types == ("FI_EP_RDM", "FI_EP_DGRAM")
    assert all(p.old_fabric_naming for p in info.providers)
    assert info.providers[2].protocol == "FI_PROTO_RXD"


def test_fi_info_hpc6a_rdm_and_dgram_of_one_device():
    info = parse_fi_info(read("fi-info/hpc6a_1dev_efa_121.0_rdm-dgrm.txt"))
    assert info.domains == ("rdmap0s31-rdm", "rdmap0s31-dgrm")
    assert info.devices == ("rdmap0s31",)
    assert info.versions == ("121.0",)
    assert not any(p.old_fabric_naming for p in info.providers)


def test_fi_info_garbage_raises_but_empty_output_is_no_provider():
    with pytest.raises(ValueError, match="not fi_info output"):
        parse_fi_info("Segmentation fault (core dumped)\n")
    empty = parse_fi_info("")
    assert empty.providers == () and not empty.ok


# --- hw_counters -------------------------------------------------------------------------------


def test_counters_name_colon_value_listing_keeps_client_and_server_blocks():
    # Given a pasted `name :value` listing of efa_0's hw_counters on a client and a server
    counters = parse_efa_counters(read("efa-sysfs/efa0_hw_counters_client-server_2020_perftest-issue113.txt"))
    # Then each block becomes its own "device" with all 26 counters
    assert counters.form == "listing"
    assert list(counters.devices) == ["client", "server"]
    assert len(counters.devices["client"]) == 26
    assert counters.value("client", "tx_pkts") == 1
    assert counters.value("client", "rx_pkts") == 0
    assert counters.value("client", "completed_cmds") == 105
    assert counters.value("server", "keep_alive_rcvd") == 91
    assert counters.value("server", "rx_drops") == 0
    # and the 2020 driver has no retransmit counters
    assert counters.value("client", "retrans_timeout_events") is None


def test_counters_prometheus_exposition_gives_the_p5_device_set():
    # Given the EFA node-exporter's tx_pkts series on a p5.48xlarge
    counters = parse_efa_counters(read("efa-sysfs/p5_32dev_node-exporter_amazonefa_tx_pkts.prom"))
    # Then all 32 devices are read, with the exponent-notation values as integers
    assert counters.form == "prometheus"
    assert len(counters.devices) == 32
    assert "rdmap79s0" in counters.devices and "rdmap201s0" in counters.devices
    assert counters.value("rdmap113s0", "tx_pkts") == 1_664_737
    assert counters.value("rdmap130s0", "tx_pkts") == 1_664_200
    assert all(set(values) == {"tx_pkts"} for values in counters.devices.values())


def test_counters_collector_triples_and_sysfs_grep_form():
    text = (
        "rdmap16s27 rx_drops 0\nrdmap16s27 retrans_timeout_events 3\nrdmap32s27 rx_drops 12\n"
        "/sys/class/infiniband/rdmap48s27/ports/1/hw_counters/rdma_read_wr_err:7\n"
    )
    counters = parse_efa_counters(text)
    assert counters.devices == {
        "rdmap16s27": {"rx_drops": 0, "retrans_timeout_events": 3},
        "rdmap32s27": {"rx_drops": 12},
        "rdmap48s27": {"rdma_read_wr_err": 7},
    }


def test_counters_unnamed_listing_and_garbage():
    assert parse_efa_counters("rx_drops :4\n").devices == {UNNAMED_DEVICE: {"rx_drops": 4}}
    with pytest.raises(ValueError, match="no EFA counter"):
        parse_efa_counters("<html>502 Bad Gateway</html>\n")


# --- port states -------------------------------------------------------------------------------


def test_ports_active_and_down():
    # Given the collector's `<dev> <state>` lines with one port down
    ports = parse_efa_ports("rdmap16s27 4: ACTIVE\nrdmap32s27 1: DOWN\nrdmap144s27 4: ACTIVE\n")
    # Then three ports on three devices are read and exactly one is not active
    assert ports.devices == ("rdmap16s27", "rdmap32s27", "rdmap144s27")
    assert [(p.device, p.state_code, p.state) for p in ports.down] == [("rdmap32s27", 1, "DOWN")]
    assert ports.ports[0].active


def test_ports_grep_form_and_missing_sysfs():
    ports = parse_efa_ports("/sys/class/infiniband/efa_0/ports/1/state:4: ACTIVE\n")
    assert [(p.device, p.port, p.active) for p in ports.ports] == [("efa_0", 1, True)]
    # a node without EFA: the read fails, which means "no device", not garbage
    none = parse_efa_ports("*\ncat: '/sys/class/infiniband/*/ports/1/state': No such file or directory\n")
    assert none.ports == () and len(none.missing_notes) == 1
    assert parse_efa_ports("").ports == ()
    with pytest.raises(ValueError, match="no EFA port state"):
        parse_efa_ports("rdmap16s27 ACTIVE maybe\n")


def test_collector_unreadable_state_and_counter_lines():
    # Given the collector's shapes for a device whose files could not be read
    ports = parse_efa_ports(
        "rdmap16s27 4: ACTIVE\n"
        "rdmap32s27 cat: /sys/class/infiniband/rdmap32s27/ports/1/state: Input/output error\n"
    )
    # Then the device still counts, with a port that is not active
    assert ports.devices == ("rdmap16s27", "rdmap32s27")
    assert [(p.device, p.state) for p in ports.down] == [("rdmap32s27", "UNREADABLE")]
    counters = parse_efa_counters("rdmap16s27 rx_drops 0\nrdmap32s27 rx_drops <unreadable>\n")
    assert counters.devices == {"rdmap16s27": {"rx_drops": 0}, "rdmap32s27": {}}
    assert counters.unreadable == ("rdmap32s27 rx_drops",)


def test_prometheus_value_beyond_a_float_is_a_value_error():
    # Given a node-exporter series whose value reads as infinity (once an OverflowError)
    with pytest.raises(ValueError, match="out of range"):
        parse_efa_counters('node_amazonefa_rx_drops{device="rdmap0",port="1"} 1e999\n')
    # ... while exponent notation within range is still read as an integer
    counters = parse_efa_counters('node_amazonefa_rx_drops{device="rdmap0",port="1"} 1.5e3\n')
    assert counters.value("rdmap0", "rx_drops") == 1500


def test_unreadable_state_needs_a_reason_after_the_device():
    # Given device lines followed by text with and without a read-failure reason
    ports = parse_efa_ports(
        "rdmap16s27\t\tcat: state: Permission denied\nrdmap32s27 <UNREADABLE>\nrdmap48s27 4: ACTIVE\n"
    )
    # Then both failures are unreadable ports (the reason is matched in any case)
    assert [(p.device, p.state) for p in ports.ports] == [
        ("rdmap16s27", "UNREADABLE"),
        ("rdmap32s27", "UNREADABLE"),
        ("rdmap48s27", "ACTIVE"),
    ]
    # ... and a device followed by other text is not a port
    with pytest.raises(ValueError, match="no EFA port state"):
        parse_efa_ports("rdmap16s27 is fine\n")


def test_fi_info_values_lose_surrounding_blanks_only():
    # Given fields padded with blanks on both sides and blanks inside
    info = parse_fi_info(
        "provider:   efa  \n    fabric: efa \t\n    domain:  rdmap0-rdm\n    type: FI_EP_RDM   \n"
    )
    # Then the values are read from first to last non-blank character
    (provider,) = info.providers
    assert (provider.provider, provider.fabric, provider.domain, provider.endpoint_type) == (
        "efa",
        "efa",
        "rdmap0-rdm",
        "FI_EP_RDM",
    )
