"""Output formats, each written once against the Results table."""
