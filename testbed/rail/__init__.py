"""Rail-only and rail-optimized networks: grid, testbeds, workers, all-to-all, bench, demo,
spare-domain failover and its benchmark, analytical models."""
