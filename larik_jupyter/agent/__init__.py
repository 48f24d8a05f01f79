"""The agent: the turn loop joining session, checkpoints, config, providers and tools."""
