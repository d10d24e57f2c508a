"""Where a topology comes up: loopback UDP, Mininet, Docker; BMv2 as a switch implementation."""
