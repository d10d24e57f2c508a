"""The host agent: the SmartNIC emulation that runs a worker's collectives."""
