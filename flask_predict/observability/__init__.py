"""What the server tells about itself: Prometheus series, per-version statistics, traffic
rates, the access log and log lines, and time spent queued before a worker."""
