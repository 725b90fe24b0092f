"""CLI subcommands: each module defines ``register(subparsers)`` and sets a ``handler`` default."""
