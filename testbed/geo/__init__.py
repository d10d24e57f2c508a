"""Geo-distributed training (FusionLLM): site topology, testbeds, benchmark."""
