"""innet.controller."""
