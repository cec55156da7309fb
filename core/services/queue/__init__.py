"""The review queue: claiming the next candidate of a Horn queue, skip, undo, the Redis index of the queues and the candidate's views."""
