"""In-process fakes of external systems that speak their real wire protocol (a local OpenAI-compatible server)."""
