"""innet.host."""
