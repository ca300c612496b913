"""The `kraftsim` command: thin wrappers that parse flags and call the layers below."""
