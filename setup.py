"""Packaging glue that pyproject.toml cannot express: the top-level records/ folder ships
inside the wheel as the package `kraftsim._records`. Everything else is in pyproject.toml."""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["kraftsim", "kraftsim.*"]) + ["kraftsim._records"],
    package_dir={"kraftsim._records": "records"},
)
