"""Levy models come with the levy issue."""
