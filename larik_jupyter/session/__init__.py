"""The append-only session store, replay into State, branches and export."""
