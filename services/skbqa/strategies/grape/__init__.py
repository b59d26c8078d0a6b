"""GRAPE (Graph Reasoning with Anonymous Path Encoders): encoder-guided beam search over the graph, driven by an
anonymous query graph built from the parser's structured query, with a small trained scorer and completeness
judge (see strategy.py for the request flow and training.py for `skbqa train-grape`)."""
