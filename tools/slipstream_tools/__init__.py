"""Command-line tools and test-bed helpers for Slipstream (stdlib only)."""

VERSION = "0.1.0"
