"""The DIF method: reasoning accuracy under personas against null personas."""
