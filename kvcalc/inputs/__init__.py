"""User material other than specs: engine logs, request-length distributions and traces, check files."""
