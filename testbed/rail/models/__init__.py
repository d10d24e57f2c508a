"""Analytical models of rail networks: collective completion times (``railperf``) and network
cost and power (``netcost``). Pure functions of frozen inputs; ``innet model`` prints them."""
