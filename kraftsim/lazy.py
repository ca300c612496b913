"""A package's public names, imported from their modules on first use (PEP 562).

Packages whose modules are heavy or start threads (Spark's, hypothesis's) or import each
other late keep `import kraftsim.X` cheap: their `__init__` names where each attribute
lives and gets its module-level `__getattr__` from `exports`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping


def exports(package: str, module_of: Mapping[str, tuple[str, str]]) -> Callable[[str], object]:
    """`__getattr__` for `package`: name -> (module, attribute), the module's full name. A
    name once loaded becomes an ordinary attribute of the package."""

    def __getattr__(name: str) -> object:
        where = module_of.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = where
        value = getattr(importlib.import_module(module), attribute)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
