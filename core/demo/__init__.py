"""The demo corpus and users shipped with the package (`r2k demo`)."""
