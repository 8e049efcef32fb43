"""The CDXJ index and what reads it: pywb's lines and SURT keys, where a collection's lines are read from (files or Redis), one URL's captures, permanent capture ids."""
