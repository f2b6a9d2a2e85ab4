"""Prometheus `/metrics` (docs/monitoring.md): per-pipeline series built at scrape time, and the app's own counts."""
