"""The public gRPC API (`skbqa.v1.Skbqa`): one servicer over two backends — the stages in process (embedded
`skbqa serve`) or the bus to the stage services (the distributed gateway)."""
