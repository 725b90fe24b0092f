"""Flowbuilder's built-in node types, one module per family.

Importing this package registers every built-in node with the default registry. Each module only
imports from ``flowbuilder``'s public API; provider SDKs are imported lazily inside the nodes.
"""

from nodes import inputs  # noqa: F401
from nodes import utility  # noqa: F401
from nodes import embedders  # noqa: F401
from nodes import vectorstores  # noqa: F401
from nodes import retrievers  # noqa: F401
from nodes import loaders  # noqa: F401
from nodes import labeller  # noqa: F401
from nodes import splitters  # noqa: F401
from nodes import agent  # noqa: F401
from nodes import chat  # noqa: F401
from nodes import llms  # noqa: F401
from nodes import prompts  # noqa: F401
