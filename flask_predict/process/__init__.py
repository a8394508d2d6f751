"""The gunicorn process model: the master's hooks, its worker pool and rollouts, readiness
across workers, the sync worker and the standalone server's logs and environment."""
