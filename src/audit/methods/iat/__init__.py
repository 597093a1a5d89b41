"""The IAT word-association method (Bai et al. 2024)."""
