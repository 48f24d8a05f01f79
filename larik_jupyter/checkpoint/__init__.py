"""Per-turn file checkpoints: capture before a write, undo a turn, reload across runs, prune."""
