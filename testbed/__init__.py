"""innet.testbed."""
