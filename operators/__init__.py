"""bookindex: operators layer."""
