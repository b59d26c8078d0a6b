"""SAGE (Structure-Aware Graph Expansion): an offline similarity graph over the rich-text nodes of an index
(`graph_build`, stored by `store` under INDEX_DIR/sage) and the `sage` strategy that expands a base strategy's
seeds with their first-hop neighbours (`strategy`).

Modules: corpus (texts as word-id arrays), rich (which nodes carry rich text), entities (names linked inside
texts), signals (candidates, pair scores, percentile pruning), graph_build, store, strategy.
"""
