"""Statistics shared by the methods."""
