"""Running the workstation: administration, sweeps, statistics and agreement, the dashboard, live workers, the event stream, webhooks and the demo."""
