"""A notebook file's JSON text: its layout, exact splices into it, and validation.

Pure Python over `json` and nbformat's schemas; imports nothing else of the package, so both
the checkpoint store (undo of cells in a closed notebook) and the notebook tools write
notebooks through it.
"""
