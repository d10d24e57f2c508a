"""innet.switch.pipeline."""
