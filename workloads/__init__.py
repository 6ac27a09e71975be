"""What one request of each workload is (per dialect), and the open-arrival dispatcher."""
