"""LuWu runs: optimizer nodes, DDP/FSDP baselines, the benchmark and the demo."""
