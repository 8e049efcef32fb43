"""Where state is stored: the root's backend (SQLite files or one Redis), SQLite connections, the Redis database and keys, harvest state on Redis, backend copy."""
