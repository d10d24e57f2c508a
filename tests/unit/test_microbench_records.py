"""innet.testbed.microbench.records: the micro-benchmarks' typed rows give the JSON their saved
documents, tables and plots read, key for key and in the documents' order."""

from __future__ import annotations

import json

from innet.testbed.core.machine import Machine
from innet.testbed.microbench.records import AgentRow, PacketRow, ExecutorRow, SenderCounts, VethRow, WriteRow

MACHINE = Machine("h", "TestCPU", 2, "6.1", "Linux", "3.11.9", "0.5 0.4 0.3", None, None)


def test_agent_write_and_packet_rows_keep_the_documents_keys_in_order() -> None:
    agent = AgentRow("native", 64, 64, 1 << 20, 3, 90000, 95000, 5760000, 0, 80000000).to_json()
    assert list(agent) == ["datapath", "k", "window", "values", "rounds", "chunks_per_s", "chunks_per_cpu_s",
                           "values_per_s", "retransmitted", "quantize_values_per_s"]
    assert list(WriteRow("INSERT", 1, 1000, 1, 0.5, 2000).to_json()) == [
        "op", "batch", "entries", "rounds", "seconds", "entries_per_s"]
    packet = PacketRow(64, "max", 10000, 50000, 9900, 0.01, 49000, 0.2, 49500, 0.9).to_json()
    assert list(packet) == ["frame_bytes", "offered_pkt_per_s", "sent", "send_rate", "received", "loss",
                            "forwarded_pkt_per_s", "switch_cpu_s", "pkt_per_switch_cpu_s", "switch_cpu_util"]
    assert packet["offered_pkt_per_s"] == "max"


def test_pipeline_row_lists_its_rounds_and_keeps_none_for_the_python_executor() -> None:
    row = ExecutorRow("basic_forward", "p4/examples/basic_forward.p4", "one IPv4 packet", 64, 90000, 100000, 0, 0,
                      270000, 1, (100000,), 0, None, (), None, 1, "python", 50000, True, True, 0, None).to_json()
    assert list(row)[:4] == ["workload", "program", "packets_used", "bytes_per_packet"]
    assert list(row)[-4:] == ["meets_target", "meets_target_cpu", "target_elements_per_cpu_s",
                              "meets_element_target"]
    assert row["round_pkt_per_cpu_s"] == [100000] and row["round_executor_alone_pkt_per_cpu_s"] == []
    assert row["executor_alone_pkt_per_cpu_s"] is None and json.loads(json.dumps(row)) == row


def test_veth_row_lists_every_round_and_the_sender_counts_come_from_its_json_line() -> None:
    row = VethRow("agg64", "innet-switch", 318, 1500, 400000, 350000, 200000, 0.5, (0.5, 0.52), 0.57, (0.57, 0.6),
                  (400000, 390000), (350000, 340000), (200000, 203000), {"frames_per_batch": 12.0}).to_json()
    assert list(row) == ["workload", "switch", "frame_bytes", "mtu", "ceiling_pps", "ring_ceiling_pps", "switch_pps",
                         "ratio", "round_ratios", "ring_ratio", "round_ring_ratios", "round_ceiling_pps",
                         "round_ring_ceiling_pps", "round_switch_pps", "loop"]
    assert row["round_ratios"] == [0.5, 0.52] and json.loads(json.dumps(row)) == row
    counts = SenderCounts.from_json(json.loads('{"pps": 123456.5, "sent": 10, "received": 9, "reprimes": 0}'))
    assert counts == SenderCounts(123456.5, 10, 9, 0)


def test_veth_document_has_its_head_points_and_rows_in_order() -> None:
    from innet.testbed.microbench.records import Point, VethBench

    point = Point("agg64", "reflector", 318, 400000.0, 1200000, 1199000, 0)
    assert list(point.to_json()) == ["workload", "device", "frame_bytes", "pps", "sent", "received", "reprimes",
                                     "loop"]
    doc = VethBench("2026-11-28T17:00:00", MACHINE, "default", "default", {"seconds": 3.0}, (point,), (),
                    {"bmv2": "simple_switch_grpc not found"}, False).to_json()
    assert list(doc) == ["format", "date", "machine", "executor", "port_loop", "settings", "points", "rows",
                         "switch_absent", "partial"]
    assert doc["format"] == "innet-bench-veth/1" and doc["points"] == [point.to_json()]
