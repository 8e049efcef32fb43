"""Fixity and verification: the BagIt manifest and its log, record scanners that find where a file stops being whole and check every record's digests, `strata verify`."""
