"""Who may do what: roles and permissions, API tokens and their authentication, failed-login counts,
client addresses, rate limits and the audit trail."""
