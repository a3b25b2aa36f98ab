"""Server lifecycle: start, readiness with liveness, logs, whole-group teardown, sharing."""
