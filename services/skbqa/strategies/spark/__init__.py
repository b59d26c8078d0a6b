"""SPARK (SAGE paper, Figure 3): one LLM call writes a retrieval plan mixing semantic search and graph queries;
skbqa executes it with its own safe executor. `plan` (language + defensive parser), `prompts` (the one prompt),
`executor` (runs a plan over the stores), `strategy` (the `spark` strategy), `config` (settings)."""
