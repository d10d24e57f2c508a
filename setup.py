"""Maps the repository's top-level folders into the ``innet`` namespace.

The repository keeps ``wire/``, ``switch/``, ``controller/``, ``host/``, ``testbed/`` and ``p4/`` at the
top level (docs/design.md, "Layout and layers"), yet everything must import as
``innet.<part>``; a static list in pyproject.toml
would have to name every sub-package, so the mapping is computed here.
"""

from setuptools import find_packages, setup

PARTS = ("wire", "switch", "controller", "host", "testbed", "p4")

packages = ["innet"] + [
    "innet." + name for name in find_packages(include=[p for part in PARTS for p in (part, part + ".*")])
]

setup(
    packages=packages,
    package_dir={"innet": "."},
    package_data={"innet.p4": ["*.p4", "*.stf", "include/*.p4", "**/*.p4", "**/*.stf"], "innet": ["py.typed"],
                  "innet.host.agent.native": ["*.c"], "innet.host.luwu.native": ["*.c"], "innet.testbed.microbench.native": ["*.c"],
                  "innet.switch.native": ["*.c"],
                  "innet.switch.frontend": ["*.lark"]},
    include_package_data=False,
)
