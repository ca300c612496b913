"""Helpers for testing code built on kraftsim.

`kraftsim.testing.strategies` holds hypothesis strategies driven by the record schemas
(messages of any record type at any version, unknown tagged fields, batch payloads). It
needs hypothesis, which is a test dependency only (`pip install kraftsim[test]`), so it is
not imported here: importing `kraftsim.testing` itself never requires hypothesis.
"""
