"""A stand-in written by the repro project for its tests; not Tholos-Bench's runner.

It offers the command line of `tholos bench` and the modules and functions repro's driver
(images/tholos/driver.py) and `repro check` (repro/suites/external/tholos_check.py) call into:
`tholos.cli.main`, `tholos.bench.runner.bench`, `run_scenario` and `evaluate`, `tholos.model`
(whose `httpx` the driver observes), `tholos.workspace.get_run` and `tholos.db`. Everything it
does is its own, small and simple: see README.md beside this package.
"""

__version__ = "0.0.0+standin"
