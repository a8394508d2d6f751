"""The runner: one process per machine (or per GPU) that holds the models whose framework
cannot be shared by fork, and batches the sync workers' requests to them."""
