"""Why a scenario file is refused before anything runs."""

from __future__ import annotations

from kraftsim.errors import KraftsimError


class ScenarioInvalid(KraftsimError):
    """A file that is not a valid scenario: the message names the file, the step (1 for the
    first `[[step]]`), the key and what was expected. The CLI exits 2 on it."""

    def __init__(self, file: str, key: str | None, expected: str, step: int | None = None):
        self.file = file
        self.key = key
        self.step = step
        self.expected = expected
        where = [file]
        if step is not None:
            where.append(f"step {step}")
        if key is not None:
            where.append(f"key `{key}`")
        super().__init__(": ".join(where) + ": " + expected)
