"""incidents."""
