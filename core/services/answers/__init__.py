"""The registry of approved answers and its export."""
