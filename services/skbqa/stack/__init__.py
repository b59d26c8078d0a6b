"""`skbqa stack`: the local distributed stack on 127.0.0.1 — broker, Triton encoder server, every service as its own
process (Ray inside the reranker service), optionally Prometheus — and stopping exactly what it started."""
