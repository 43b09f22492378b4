"""The infiniband output family."""
