"""Packaging glue that pyproject.toml cannot express: the top-level records/ folder ships
inside the wheel as the package `kraftsim._records`, the top-level scenarios/ folder (the
shipped what-ifs, without from-real/, whose paths point outside the repository) as
`kraftsim._scenarios`, and the optional C extension
`kraftsim.protocol._speedups` (the protocol fast path; see kraftsim/protocol/fastpath.py).
Everything else is in pyproject.toml.

The extension is optional: without a C compiler the build goes on and kraftsim runs on
its pure-Python codec (same results, slower).
"""

import sys

from setuptools import Extension, find_packages, setup

_extra_compile_args = [] if sys.platform == "win32" else ["-O3", "-Wall", "-Wno-missing-field-initializers"]

setup(
    packages=find_packages(include=["kraftsim", "kraftsim.*"]) + ["kraftsim._records", "kraftsim._scenarios"],
    package_dir={"kraftsim._records": "records", "kraftsim._scenarios": "scenarios"},
    ext_modules=[
        Extension(
            "kraftsim.protocol._speedups",
            sources=["kraftsim/protocol/_speedups.c"],
            extra_compile_args=_extra_compile_args,
            optional=True,
        )
    ],
)
