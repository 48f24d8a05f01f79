"""Widgets of the notebook front end: thin views over the session layer."""
