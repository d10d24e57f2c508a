"""testkit: test doubles and shared test setup, for the tests only.

Why here and not in the package: nothing in ``innet`` (no entry point, benchmark or doc
snippet) uses a fake, so shipping them would only blur which classes are real. Tests
import it as ``testkit`` (pyproject's ``[tool.pytest.ini_options] pythonpath`` puts
``tests/`` on the path); fixtures shared between test files live in ``conftest.py``
files, never in another test module.

- ``fake_target``: ``FakeTarget``, an in-memory P4Runtime target (the
  ``innet.switch.p4runtime.target_api`` interface) and ``sample_p4info()``;
- ``fake_innet_switch``: ``FakeInnetSwitch``, a pure-Python model of the switch side of
  docs/PROTOCOL.md, with UDP and frame-port adapters, for host agent tests.
- ``rank_sums``: random int32 vectors per rank, their wrapped sums, and ranks run as
  threads, for the aggregation tests of both agents.
"""
