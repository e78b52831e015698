"""bookindex: parsing layer."""
