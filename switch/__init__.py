"""innet.switch."""
