"""The models: folders and their versions, the plugins that load them, the repository a
worker serves from, its watcher and control plane, and the copies the gunicorn master shares."""
