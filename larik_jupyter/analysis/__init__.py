"""A branch of the conversation as an analysis: its steps read from the transcript (and the
checkpoints' file snapshots), written as a notebook, replayed in a fresh kernel without the
model, or compared with another branch."""
