"""Configuration: four layers with trust, safe JSON updates, permission rules, instruction files."""
