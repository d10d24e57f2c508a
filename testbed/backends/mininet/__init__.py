"""Mininet, wrapped once: network, switch nodes, link impairments, cleanup."""
