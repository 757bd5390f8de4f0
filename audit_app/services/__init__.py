"""Services: every write the audit app makes goes through a function here."""
