"""What the system under test was doing while the load ran: CPU, memory, DB, /metrics."""
