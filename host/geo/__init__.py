"""Geo-distributed training across sites, after the FusionLLM paper (docs/geo.md).

- :mod:`.ops` and :mod:`.graph`: the model as a DAG of operators (OP-DAG), numpy forward and
  backward per operator, an MLP and a toy GPT-2 block.
- :mod:`.stages`: partition of the DAG into pipeline stages and the per-stage executor.
- :mod:`.codec`, :mod:`.channel`: messages between stages and the links that carry them
  (in-process queues, TCP, a WAN shaper for rate and delay).
- :mod:`.rad`: remote autodiff: stages on different sites exchange activations forward and
  gradients backward.
- :mod:`.compress`: top-k with error feedback, fixed ratio and AdaTopK.
- :mod:`.throughput`: the rate a boundary delivers now, measured from the training messages.
- :mod:`.estimator`, :mod:`.speed` and :mod:`.opfence`: workload estimation, device speeds
  and bandwidth-aware placement (with the baselines it is compared against).
- :mod:`.stage_process` and :mod:`.launch`: one stage as a process, and starting and wiring
  the stage processes of one or more pipelines.
- :mod:`.dataparallel` and :mod:`.dp_process`: data parallel across sites, the baseline.
- :mod:`.data`: small tasks every site regenerates from a seed.
- :mod:`.torchfx` and :mod:`.torch_models`: PyTorch modules traced into the OP-DAG.

Only :mod:`.torchfx` and :mod:`.torch_models` need torch (imported inside their
functions); the rest is numpy only.
"""
