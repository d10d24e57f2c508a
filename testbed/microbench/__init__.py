"""Micro-benchmarks: agent, pipeline, P4Runtime and veth."""
