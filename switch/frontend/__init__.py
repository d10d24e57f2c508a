"""innet.switch.frontend."""
