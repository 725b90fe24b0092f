"""Flowbuilder's built-in node types, one module per family.

Importing this package registers every built-in node with the default registry. Each module only
imports from ``flowbuilder``'s public API; provider SDKs are imported lazily inside the nodes.
"""

from nodes import inputs
from nodes import utility
from nodes import embedders
from nodes import vectorstores
from nodes import retrievers
from nodes import loaders
from nodes import labeller
from nodes import splitters
from nodes import agent
from nodes import chat
from nodes import llms
from nodes import prompts
