"""The notebook front end: `%larik` magics, the live transcript and the widgets."""
