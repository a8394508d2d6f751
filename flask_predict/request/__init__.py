"""One request as every part sees it: its record, its transport's view of the body, the
limits it is held to, the tokens it presents, how its body parses, and the table of
protocols it may speak. No Flask, no gRPC: front ends, observability and settings all
stand on it."""
