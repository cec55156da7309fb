"""r2k's front ends: the Textual workstation and the JSON command line, thin callers of `core`."""
