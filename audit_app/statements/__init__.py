"""Monthly showback and chargeback statements: every dollar of a month given to a team."""
