"""Real-time or asynchronous: the classifier (pure) and the service that classifies every
workload."""
