"""Modal screens: help and the model's exception."""
