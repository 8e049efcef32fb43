"""Holdings that travel: the WACZ package."""
