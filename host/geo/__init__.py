"""Geo-distributed training across sites (FusionLLM, issue 12).

- :mod:`.ops` and :mod:`.graph`: the model as a DAG of operators (OP-DAG), numpy forward and
  backward per operator, an MLP and a toy GPT-2 block.
- :mod:`.stages`: partition of the DAG into pipeline stages and the per-stage executor.
- :mod:`.codec`, :mod:`.channel`: messages between stages and the links that carry them
  (in-process queues, TCP, a WAN shaper for rate and delay).
- :mod:`.rad`: remote autodiff: stages on different sites exchange activations forward and
  gradients backward.
- :mod:`.compress`: top-k with error feedback, fixed ratio and AdaTopK.
- :mod:`.estimator` and :mod:`.opfence`: workload estimation and bandwidth-aware placement.

Nothing here needs torch; numpy only.
"""
