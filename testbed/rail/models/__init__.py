"""Analytical models of rail networks (the Rail-only paper's evaluation): collective times
(``railperf``), GPT shapes and FLOPs (``gpt``), iteration time and HFU (``iteration``), the
paper's figures 8-10 (``sweeps``), per-pair traffic (``traffic``) and network cost and power
(``netcost``). Pure functions of frozen inputs; ``innet model`` prints them."""
