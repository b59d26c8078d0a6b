"""skbqa: multi-hop question answering over semi-structured knowledge bases."""

__version__ = "0.1.0"
