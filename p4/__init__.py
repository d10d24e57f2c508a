"""innet.p4."""
