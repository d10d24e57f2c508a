"""The lowering both executors share: what an IR construct means in slots and calls.

The Python executor (``innet.switch.pipeline``) and the native one (``innet.switch.native``)
emit different text (Python source, C) for the same decisions: which slots an l-value
denotes, which argument of an extern call is which, which call a call statement makes,
which field list a clone carries, which construct is refused and how the refusal reads.
Those decisions live here, once; each executor's generator is an emitter that is handed
the decision and writes its own text. Nothing here imports either executor: what a part
needs of one (its slot layout, its error class, the emitter's hooks) is passed in.
"""
