"""The network output family."""
