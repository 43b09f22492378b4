"""The tool's version (the manifest records it; `clusterforge --version` prints it)."""

__version__ = "0.1.0"
